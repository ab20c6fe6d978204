// Report::writeJson: every measurement, per repetition and summarized, for
// scripts. Non-finite numbers (no bytes moved, no samples) are written as null.
#include <cmath>
#include <fstream>
#include <sstream>

#include "config.h"
#include "tools/bagua_net_perf/report.h"
#include "tools/bagua_net_perf/stats.h"
#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {
namespace {

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream out;
  out.precision(9);
  out << v;
  return out.str();
}

std::string summary(const std::vector<double>& values) {
  Summary s = summarize(values);
  return "{\"min\": " + num(s.min) + ", \"median\": " + num(s.median) + ", \"max\": " + num(s.max) +
         "}";
}

// Per-round ratios against the reference configuration: count, median and 95% interval.
std::string ratioSummary(const std::vector<double>& ratios) {
  Interval ci = medianInterval(ratios);
  return "{\"rounds\": " + std::to_string(ratios.size()) +
         ", \"median\": " + num(summarize(ratios).median) + ", \"ci95\": [" + num(ci.low) + ", " +
         num(ci.high) + "]}";
}

}  // namespace

void Report::writeJson(const std::string& path) const {
  std::ostringstream j;
  const Options& o = options_;
  j << "{\n  \"tool\": \"bagua-net-perf\",\n  \"version\": " << quote(BAGUA_VERSION) << ",\n";
  j << "  \"options\": {\"world\": " << o.worldSize() << ", \"depth\": " << o.depth
    << ", \"iters\": " << o.iters << ", \"warmup\": " << o.warmup << ", \"reps\": " << o.reps
    << ", \"check\": " << (o.check ? "true" : "false") << ", \"min_bytes\": " << o.minBytes
    << ", \"max_bytes\": " << o.maxBytes << ", \"factor\": " << o.factor
    << ", \"timeout_s\": " << num(static_cast<double>(o.timeout.count())) << "},\n";
  j << "  \"formulas\": {\"algbw_gbps\": \"S / t / 1e9\", \"t\": \"max over ranks of loop "
       "seconds / iters (pingpong: / 2 iters)\", \"cpu_s_per_gb\": \"sum of user+sys seconds / "
       "(sum of bytes sent+received / 1e9)\"},\n";
  j << "  \"configs\": [";
  for (size_t c = 0; c < o.configs.size(); ++c) {
    const Config& config = o.configs[c];
    j << (c ? ",\n    " : "\n    ") << "{\"name\": " << quote(config.name)
      << ", \"kind\": " << quote(config.tcpBaseline ? "tcp-baseline" : "plugin")
      << ", \"plugin\": " << quote(config.plugin) << ", \"env\": {";
    for (size_t e = 0; e < config.env.size(); ++e) {
      j << (e ? ", " : "") << quote(config.env[e].first) << ": " << quote(config.env[e].second);
    }
    j << "}}";
  }
  size_t baseline = referenceConfig(o);
  j << "\n  ],\n  \"series\": [";
  bool first = true;
  for (Pattern pattern : o.patterns) {
    for (size_t c = 0; c < o.configs.size(); ++c) {
      const Series* series = find(pattern, c);
      if (!series) continue;
      const Series* base =
          baseline != c && baseline < o.configs.size() ? find(pattern, baseline) : nullptr;
      j << (first ? "\n    " : ",\n    ") << "{\"pattern\": " << quote(patternName(pattern))
        << ", \"config\": " << quote(o.configs[c].name)
        << ", \"transport\": " << quote(series->transport)
        << ", \"failure\": " << (series->failure.empty() ? "null" : quote(series->failure))
        << ", \"sizes\": [";
      first = false;
      for (size_t i = 0; i < sizes_.size(); ++i) {
        std::vector<double> bw, t, p50, p99, cpu;
        std::ostringstream reps;
        uint64_t wrong = 0;
        for (size_t r = 0; r < series->sizes[i].size(); ++r) {
          const Measure& m = series->sizes[i][r];
          bw.push_back(m.algbwGBps);
          t.push_back(m.opSeconds * 1e6);
          p50.push_back(m.p50Us);
          p99.push_back(m.p99Us);
          cpu.push_back(m.cpuSecPerGB);
          wrong += m.wrongBytes + m.sizeErrors;
          reps << (r ? ", " : "") << "{\"time_us\": " << num(m.opSeconds * 1e6)
               << ", \"algbw_gbps\": " << num(m.algbwGBps) << ", \"p50_us\": " << num(m.p50Us)
               << ", \"p99_us\": " << num(m.p99Us) << ", \"cpu_s_per_gb\": " << num(m.cpuSecPerGB)
               << ", \"wrong_bytes\": " << m.wrongBytes << ", \"size_errors\": " << m.sizeErrors
               << "}";
        }
        j << (i ? ",\n      " : "\n      ") << "{\"size\": " << sizes_[i]
          << ", \"algbw_gbps\": " << summary(bw) << ", \"time_us\": " << summary(t)
          << ", \"p50_us\": " << summary(p50) << ", \"p99_us\": " << summary(p99)
          << ", \"cpu_s_per_gb\": " << summary(cpu) << ", \"wrong\": " << wrong;
        if (base) {
          j << ", \"vs_reference\": {\"config\": " << quote(o.configs[baseline].name)
            << ", \"algbw_ratio\": "
            << ratioSummary(pairedRatios(series->sizes[i], base->sizes[i], &Measure::algbwGBps))
            << ", \"cpu_ratio\": "
            << ratioSummary(pairedRatios(series->sizes[i], base->sizes[i], &Measure::cpuSecPerGB))
            << "}";
        }
        j << ", \"reps\": [" << reps.str() << "]}";
      }
      j << "]}";
    }
  }
  j << "\n  ]\n}\n";
  std::ofstream out(path, std::ios::trunc);
  out << j.str();
  out.close();
  if (!out) TOOL_THROW(ToolError, "cannot write " + path);
}

}  // namespace bagua::net_perf
