// Reading and validating the environment knobs of the table in knobs.def,
// and the table as data (names, defaults and accepted values as text).
#include "net_plugin/base/params.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "net_plugin/base/cpu_budget.h"
#include "net_plugin/base/knob_aliases.h"
#include "net_plugin/base/log.h"
#include "net_plugin/base/status.h"

namespace bagua::net {
namespace {

// `source` is where the knob `name` was read (its own variable or an alias).
[[noreturn]] void badKnob(const char* name, const KnobSource& source, const char* expected) {
  std::string alias =
      source.isAlias ? std::string(" (the original Bagua-Net's name for ") + name + ")" : "";
  throw NetError(Status::kInvalidArgument, std::string("environment knob ") + source.from + "=\"" +
                                               source.value + "\"" + alias +
                                               " is invalid: expected " + expected);
}

// Parsing one knob's text: true with *out set when it is valid, else false
// with *expected saying what was expected. One overload per knob type.
bool parseKnob(knob::Int, const char* text, long long lo, long long hi, int* out,
               std::string* expected) {
  char* end = nullptr;
  long parsed = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || parsed < lo || parsed > hi) {
    *expected = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return false;
  }
  *out = static_cast<int>(parsed);
  return true;
}

bool parseKnob(knob::Bytes, const char* text, long long lo, long long hi, size_t* out,
               std::string* expected) {
  size_t parsed = 0;
  if (!parseBytes(text, &parsed) || parsed < static_cast<size_t>(lo) ||
      parsed > static_cast<size_t>(hi)) {
    *expected =
        "a size (e.g. 256K, 4M) in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] bytes";
    return false;
  }
  *out = parsed;
  return true;
}

bool parseKnob(knob::AutoBytes, const char* text, long long lo, long long hi, size_t* out,
               std::string* expected) {
  if (std::string(text) == "auto") {
    *out = kAutoBytes;
    return true;
  }
  if (parseKnob(knob::Bytes{}, text, lo, hi, out, expected)) return true;
  *expected = "auto or " + *expected;
  return false;
}

bool parseKnob(knob::Engine, const char* text, long long, long long, EngineKind* out,
               std::string* expected) {
  std::string value(text);
  if (value == "auto") {
    *out = EngineKind::kAuto;
  } else if (value == "io_uring" || value == "uring") {
    *out = EngineKind::kIoUring;
  } else if (value == "epoll") {
    *out = EngineKind::kEpoll;
  } else if (value == "inline") {
    *out = EngineKind::kInline;
  } else {
    *expected = "auto, io_uring, epoll or inline";
    return false;
  }
  return true;
}

bool parseKnob(knob::ZeroCopy, const char* text, long long, long long, ZeroCopyMode* out,
               std::string* expected) {
  std::string value(text);
  if (value == "off" || value == "0") {
    *out = ZeroCopyMode::kOff;
  } else if (value == "auto" || value == "1") {
    *out = ZeroCopyMode::kAuto;
  } else if (value == "always") {
    *out = ZeroCopyMode::kAlways;
  } else {
    *expected = "off, auto or always";
    return false;
  }
  return true;
}

bool parseKnob(knob::CpuList, const char* text, long long, long long, std::vector<int>* out,
               std::string* expected) {
  if (parseCpuList(text, out)) return true;
  *expected = "a CPU list such as 0-3,8";
  return false;
}

bool parseKnob(knob::Text, const char* text, long long, long long, std::string* out, std::string*) {
  *out = text;
  return true;
}

bool parseKnob(knob::Family, const char* text, long long, long long, std::string* out,
               std::string* expected) {
  std::string value(text);
  if (value != "AF_INET" && value != "AF_INET6") {
    *expected = "AF_INET or AF_INET6";
    return false;
  }
  *out = std::move(value);
  return true;
}

// Sets *out from the environment variable `name` (or, when that is unset or
// empty, from an alias of it: knob_aliases.def); throws naming the variable
// when its text is malformed.
template <typename Type>
void readKnob(const char* name, long long lo, long long hi, typename Type::Value* out) {
  KnobSource source = knobEnvValue(name);
  if (source.value == nullptr) return;
  std::string expected;
  if (!parseKnob(Type{}, source.value, lo, hi, out, &expected)) {
    badKnob(name, source, expected.c_str());
  }
}

// "256K" for 262144: the largest binary suffix that divides the size.
std::string bytesText(size_t bytes) {
  for (auto [shift, suffix] : {std::pair{30, "G"}, std::pair{20, "M"}, std::pair{10, "K"}}) {
    size_t unit = size_t{1} << shift;
    if (bytes != 0 && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  }
  return std::to_string(bytes);
}

// A value as docs/env.md's default column writes it. One overload per type.
std::string knobText(knob::Int, int value) { return std::to_string(value); }
std::string knobText(knob::Bytes, size_t value) { return bytesText(value); }
std::string knobText(knob::AutoBytes, size_t value) {
  return value == kAutoBytes ? "auto" : bytesText(value);
}
std::string knobText(knob::Engine, EngineKind value) {
  switch (value) {
    case EngineKind::kAuto:
      return "auto";
    case EngineKind::kIoUring:
      return "io_uring";
    case EngineKind::kEpoll:
      return "epoll";
    case EngineKind::kInline:
      return "inline";
  }
  return "?";
}
std::string knobText(knob::ZeroCopy, ZeroCopyMode value) {
  switch (value) {
    case ZeroCopyMode::kOff:
      return "off";
    case ZeroCopyMode::kAuto:
      return "auto";
    case ZeroCopyMode::kAlways:
      return "always";
  }
  return "?";
}
std::string knobText(knob::CpuList, const std::vector<int>& cpus) {
  if (cpus.empty()) return "empty";
  std::string text;
  for (int cpu : cpus) text += (text.empty() ? "" : ",") + std::to_string(cpu);
  return text;
}
std::string knobText(knob::Text, const std::string& value) {
  return value.empty() ? "unset" : value;
}
std::string knobText(knob::Family, const std::string& value) {
  return value.empty() ? "unset" : value;
}

// The values a knob accepts, as text. One overload per type.
std::string acceptedText(knob::Int, long long lo, long long hi) {
  return std::to_string(lo) + ".." + std::to_string(hi);
}
std::string acceptedText(knob::Bytes, long long lo, long long hi) {
  return bytesText(static_cast<size_t>(lo)) + ".." + bytesText(static_cast<size_t>(hi));
}
std::string acceptedText(knob::AutoBytes, long long lo, long long hi) {
  return "auto | " + acceptedText(knob::Bytes{}, lo, hi);
}
std::string acceptedText(knob::Engine, long long, long long) {
  return "auto | io_uring | epoll | inline";
}
std::string acceptedText(knob::ZeroCopy, long long, long long) { return "off | auto | always"; }
std::string acceptedText(knob::CpuList, long long, long long) { return "a CPU list"; }
std::string acceptedText(knob::Text, long long, long long) { return "any text"; }
std::string acceptedText(knob::Family, long long, long long) { return "AF_INET | AF_INET6"; }

}  // namespace

Params loadParams() {
  Params p;
#define BAGUA_NET_KNOB(name, field, Type, def, min, max, doc) \
  readKnob<knob::Type>(#name, min, max, &p.field);
#include "net_plugin/base/knobs.def"
#undef BAGUA_NET_KNOB
  if (p.localRanks == 0) p.localRanks = localRanksFromLauncher(std::getenv);
  return p;
}

const std::vector<KnobInfo>& knobTable() {
  static const std::vector<KnobInfo> table = [] {
    const Params defaults;
    std::vector<KnobInfo> rows;
#define BAGUA_NET_KNOB(name, field, Type, def, min, max, doc)            \
  rows.push_back(KnobInfo{#name, knobText(knob::Type{}, defaults.field), \
                          acceptedText(knob::Type{}, min, max), doc});
#include "net_plugin/base/knobs.def"
#undef BAGUA_NET_KNOB
    return rows;
  }();
  return table;
}

const std::vector<std::string>& paramNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const KnobInfo& knob : knobTable()) list.emplace_back(knob.name);
    return list;
  }();
  return names;
}

const Params& params() {
  // A throwing initializer leaves the static unset, so a fixed environment is
  // read again on the next call.
  static const Params loaded = loadParams();
  return loaded;
}

int streamsToOpen(const Params& p) {
  return p.adaptiveStreams != 0 ? std::max(p.streams, p.maxStreams) : p.streams;
}

void logParams() {
  for (const std::string& name : paramNames()) {
    if (const char* value = envValue(name.c_str())) {
      BAGUA_INFO(NCCL_INIT | NCCL_NET, "%s set by environment to %s", name.c_str(), value);
    }
  }
  AliasReport aliases = aliasReport();
  for (const std::string& line : aliases.info) BAGUA_INFO(NCCL_INIT | NCCL_NET, "%s", line.c_str());
  for (const std::string& line : aliases.overridden) BAGUA_WARN("%s", line.c_str());
  if (!aliases.ignored.empty()) BAGUA_WARN("%s", aliases.ignored.c_str());
}

bool parseCpuList(const std::string& text, std::vector<int>* out) {
  constexpr long kMaxCpu = 4096;
  std::vector<int> cpus;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    long first = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || end == item.c_str() || first < 0 || first >= kMaxCpu) return false;
    long last = first;
    if (*end == '-') {
      const char* rest = end + 1;
      last = std::strtol(rest, &end, 10);
      if (end == rest || last < first || last >= kMaxCpu) return false;
    }
    if (*end != '\0') return false;
    for (long cpu = first; cpu <= last; ++cpu) cpus.push_back(static_cast<int>(cpu));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  *out = std::move(cpus);
  return true;
}
bool parseBytes(const std::string& text, size_t* out) {
  if (text.empty() || text[0] == '-') return false;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return false;
  std::string suffix(end);
  unsigned shift = 0;
  if (suffix == "" || suffix == "B") {
    shift = 0;
  } else if (suffix == "K" || suffix == "k" || suffix == "KiB") {
    shift = 10;
  } else if (suffix == "M" || suffix == "m" || suffix == "MiB") {
    shift = 20;
  } else if (suffix == "G" || suffix == "g" || suffix == "GiB") {
    shift = 30;
  } else {
    return false;
  }
  if (shift > 0 && value > (~0ull >> shift)) return false;
  *out = static_cast<size_t>(value << shift);
  return true;
}

}  // namespace bagua::net
