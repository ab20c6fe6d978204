// Parsing of the command line described in usage.cc.
#include "tools/bagua_net_perf/options.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>

#include "tools/bagua_net_perf/usage.h"
#include "tools/plugin_driver/errors.h"
#include "tools/plugin_driver/plugin_loader.h"

namespace bagua::net_perf {

using plugin_driver::resolveDefaultPlugin;
using plugin_driver::UsageError;

namespace {

constexpr int kMaxDepth = 32;  // NCCL_NET_MAX_REQUESTS: what a plugin must accept per comm
constexpr const char* kPluginKey = "plugin";  // reserved key of --configs

long parseInt(const std::string& flag, const std::string& text, long lo, long hi) {
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < lo || value > hi) {
    throw UsageError(flag + " expects an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got '" + text + "'");
  }
  return value;
}

bool validName(const std::string& name, bool envStyle) {
  if (name.empty()) return false;
  for (char c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
              (!envStyle && (c == '-' || c == '.'));
    if (!ok) return false;
  }
  return !(envStyle && std::isdigit(static_cast<unsigned char>(name[0])));
}

// "name=ENV=VAL,ENV2=VAL;name2=..." -> configs.
void parseConfigs(const std::string& text, std::vector<Config>* configs) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    Config config;
    size_t eq = item.find('=');
    config.name = item.substr(0, eq);
    if (!validName(config.name, false)) {
      throw UsageError("--configs: bad configuration name '" + config.name +
                       "' (letters, digits, '_', '-', '.'; form NAME=ENV=VAL,...)");
    }
    std::string rest = eq == std::string::npos ? "" : item.substr(eq + 1);
    size_t pos = 0;
    while (pos < rest.size()) {
      size_t comma = rest.find(',', pos);
      if (comma == std::string::npos) comma = rest.size();
      std::string assign = rest.substr(pos, comma - pos);
      pos = comma + 1;
      if (assign.empty()) continue;
      size_t aeq = assign.find('=');
      std::string key = assign.substr(0, aeq);
      if (aeq == std::string::npos || !validName(key, true)) {
        throw UsageError("--configs: in '" + config.name + "', expected ENV=VALUE, got '" + assign +
                         "'");
      }
      std::string value = assign.substr(aeq + 1);
      if (key == kPluginKey) {
        config.plugin = value;
      } else {
        config.env.emplace_back(key, value);
      }
    }
    configs->push_back(config);
  }
}

std::vector<Pattern> parsePatterns(const std::string& text) {
  std::vector<Pattern> patterns;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string name = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (name == "ring") {
      patterns.push_back(Pattern::kRing);
    } else if (name == "uni") {
      patterns.push_back(Pattern::kUni);
    } else if (name == "pingpong") {
      patterns.push_back(Pattern::kPingPong);
    } else if (name == "tree") {
      patterns.push_back(Pattern::kTree);
    } else {
      throw UsageError("--pattern expects ring, uni, pingpong or tree (comma-separated), got '" +
                       name + "'");
    }
  }
  return patterns;
}

void validate(Options* o) {
  if (o->minBytes > o->maxBytes) throw UsageError("-b is larger than -e");
  if (o->manual()) {
    if (o->world < 2 || o->rank >= o->world || o->store.empty()) {
      throw UsageError("--rank R needs --world N (N >= 2, R < N) and --store DIR");
    }
  } else if (!o->store.empty() || o->world != 0) {
    throw UsageError("--store and --world go with --rank (manual mode)");
  }
  if (!o->netns.empty() && (o->manual() || static_cast<int>(o->netns.size()) != o->ranks)) {
    throw UsageError("--netns needs one namespace per rank (" + std::to_string(o->ranks) +
                     ") and no --rank");
  }
  if (o->plugin.empty()) o->plugin = resolveDefaultPlugin();
  if (o->baselineOnly) {
    if (!o->configs.empty()) throw UsageError("--baseline-only and --configs exclude each other");
    o->baseline = true;
  } else if (o->configs.empty()) {
    o->configs.push_back(Config{"plugin", false, "", {}});
  }
  for (Config& config : o->configs) {
    if (config.plugin.empty()) config.plugin = o->plugin;
  }
  if (o->baseline) o->configs.push_back(Config{"tcp", true, "", {}});
  std::map<std::string, int> seen;
  for (const Config& config : o->configs) {
    if (seen[config.name]++) throw UsageError("configuration name '" + config.name + "' repeats");
  }
  if (!o->compareTo.empty() && !seen.count(o->compareTo)) {
    throw UsageError("--compare-to: no configuration named '" + o->compareTo + "'");
  }
}

}  // namespace

const char* patternName(Pattern pattern) {
  switch (pattern) {
    case Pattern::kRing:
      return "ring";
    case Pattern::kUni:
      return "uni";
    case Pattern::kPingPong:
      return "pingpong";
    case Pattern::kTree:
      return "tree";
  }
  return "?";
}

size_t referenceConfig(const Options& o) {
  size_t reference = o.configs.size();
  for (size_t c = 0; c < o.configs.size(); ++c) {
    bool named = o.compareTo.empty() ? o.configs[c].tcpBaseline : o.configs[c].name == o.compareTo;
    if (named) reference = c;
  }
  return o.configs.size() < 2 ? o.configs.size() : reference;
}

size_t parseSize(const std::string& text) {
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  std::string suffix(end);
  size_t shift = 0;
  if (!suffix.empty()) {
    char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
    shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 64;
    std::string tail = suffix.substr(1);
    if (shift == 64 || !(tail.empty() || tail == "B" || tail == "b")) shift = 64;
  }
  if (text.empty() || end == text.c_str() || shift == 64 || value > (1ull << 40) >> shift) {
    throw UsageError("bad size '" + text + "' (bytes with optional K, M or G; at most 1T)");
  }
  return static_cast<size_t>(value << shift);
}

std::vector<size_t> sweepSizes(const Options& o) {
  std::vector<size_t> sizes;
  for (size_t size = o.minBytes; size <= o.maxBytes; size = size ? size * o.factor : 1) {
    sizes.push_back(size);
  }
  return sizes;
}

std::string formatSize(size_t bytes) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 4 && bytes % 1024 == 0) {
    value /= 1024;
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%zu%s", bytes, units[unit]);
  return text;
}

bool parseOptions(int argc, char** argv, Options* o) {
  using Setter = std::function<void(const std::string&)>;
  const std::map<std::string, Setter> withValue = {
      {"--plugin", [&](const std::string& v) { o->plugin = v; }},
      {"--pattern", [&](const std::string& v) { o->patterns = parsePatterns(v); }},
      {"--ranks", [&](const std::string& v) { o->ranks = parseInt("--ranks", v, 2, 1024); }},
      {"--rank", [&](const std::string& v) { o->rank = parseInt("--rank", v, 0, 1023); }},
      {"--world", [&](const std::string& v) { o->world = parseInt("--world", v, 2, 1024); }},
      {"--store", [&](const std::string& v) { o->store = v; }},
      {"--netns",
       [&](const std::string& v) {
         o->netns.clear();
         for (size_t pos = 0; pos <= v.size();) {
           size_t comma = std::min(v.find(',', pos), v.size());
           o->netns.push_back(v.substr(pos, comma - pos));
           pos = comma + 1;
         }
       }},
      {"-b", [&](const std::string& v) { o->minBytes = parseSize(v); }},
      {"-e", [&](const std::string& v) { o->maxBytes = parseSize(v); }},
      {"-f", [&](const std::string& v) { o->factor = parseInt("-f", v, 2, 1 << 20); }},
      {"-n", [&](const std::string& v) { o->iters = parseInt("-n", v, 1, 1 << 24); }},
      {"-w", [&](const std::string& v) { o->warmup = parseInt("-w", v, 0, 1 << 24); }},
      {"-d", [&](const std::string& v) { o->depth = parseInt("-d", v, 1, kMaxDepth); }},
      {"-c", [&](const std::string& v) { o->check = parseInt("-c", v, 0, 1) == 1; }},
      {"--reps", [&](const std::string& v) { o->reps = parseInt("--reps", v, 1, 1000); }},
      {"--configs", [&](const std::string& v) { parseConfigs(v, &o->configs); }},
      {"--baseline-if", [&](const std::string& v) { o->baselineIf = v; }},
      {"--compare-to", [&](const std::string& v) { o->compareTo = v; }},
      {"--json", [&](const std::string& v) { o->jsonPath = v; }},
      {"--timeout",
       [&](const std::string& v) {
         o->timeout = std::chrono::seconds(parseInt("--timeout", v, 1, 86400));
       }},
      {"--dev", [&](const std::string& v) { o->dev = parseInt("--dev", v, 0, 1023); }},
      {"--abi", [&](const std::string& v) { o->abi = parseInt("--abi", v, 8, 12); }},
      {"--flows-per-peer",
       [&](const std::string& v) { o->flowsPerPeer = parseInt("--flows-per-peer", v, 1, 64); }},
  };
  const std::map<std::string, std::string> aliases = {
      {"--minbytes", "-b"},     {"--maxbytes", "-e"}, {"--stepfactor", "-f"}, {"--iters", "-n"},
      {"--warmup_iters", "-w"}, {"--depth", "-d"},    {"--check", "-c"},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      printUsage(stdout);
      return false;
    }
    if (arg == "--baseline" || arg == "--baseline-only") {
      (arg == "--baseline" ? o->baseline : o->baselineOnly) = true;
      continue;
    }
    std::string flag = arg;
    std::string value;
    bool hasValue = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    } else if (arg.size() > 2 && arg[0] == '-' && arg[1] != '-') {
      flag = arg.substr(0, 2);  // getopt style: -b8
      value = arg.substr(2);
      hasValue = true;
    }
    if (auto alias = aliases.find(flag); alias != aliases.end()) flag = alias->second;
    auto setter = withValue.find(flag);
    if (setter == withValue.end()) throw UsageError("unknown option '" + arg + "'");
    if (!hasValue) {
      if (i + 1 >= argc) throw UsageError(flag + " needs a value");
      value = argv[++i];
    }
    setter->second(value);
  }
  validate(o);
  return true;
}

}  // namespace bagua::net_perf
