// See report.h. The formulas (nccl-tests conventions, GB = 1e9 bytes):
//   t        = max over active ranks of (timed-loop seconds) / n
//              (pingpong: rank 0's loop / 2n, the one-way time of a message;
//              tree: a round up to rank 0 and back down)
//   algbw    = S / t, S = message size; for these point-to-point patterns
//              busbw = algbw (every link carries S per operation)
//   p50, p99 = nearest-rank percentiles of the per-message latencies of the
//              receiving ranks (see patterns.h for when a message starts)
//   cpu s/GB = sum over ranks of user+sys CPU seconds of the timed loop
//              / (sum over ranks of bytes sent+received / 1e9)
// Each is computed per repetition; tables show the median with min-max, and
// against the reference (the TCP baseline or --compare-to) the median of the per-round ratios
// (pairedRatios) with its distribution-free 95% confidence interval (stats.h) from 6 reps up.
#include "tools/bagua_net_perf/report.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tools/bagua_net_perf/stats.h"
#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {
namespace {

constexpr double kGB = 1e9;

std::string number(double v, const char* format) {
  if (!std::isfinite(v)) return "-";
  char text[48];
  std::snprintf(text, sizeof(text), format, v);
  return text;
}

}  // namespace

Measure measureSize(Pattern pattern, const std::vector<RankReport>& ranks, size_t sizeIndex) {
  Measure m;
  double maxSeconds = 0;
  int iters = 0;
  double cpu = 0;
  uint64_t bytes = 0;
  size_t size = 0;
  std::vector<double> latency;
  for (const RankReport& rank : ranks) {
    TOOL_ENFORCE(sizeIndex < rank.sizes.size(),
                 "rank " + std::to_string(rank.rank) + " reported fewer sizes than were run");
    const SizeResult& r = rank.sizes[sizeIndex];
    m.wrongBytes += r.wrongBytes;
    m.sizeErrors += r.sizeErrors;
    if (!r.active) continue;
    size = r.size;
    iters = r.iters;
    maxSeconds = std::max(maxSeconds, r.seconds);
    cpu += r.cpuSeconds;
    bytes += r.bytesMoved;
    if (r.receiver) latency.insert(latency.end(), r.latencyUs.begin(), r.latencyUs.end());
  }
  double nan = std::numeric_limits<double>::quiet_NaN();
  int perIter = pattern == Pattern::kPingPong ? 2 : 1;
  m.opSeconds = iters ? maxSeconds / (iters * perIter) : nan;
  m.algbwGBps = m.opSeconds > 0 ? static_cast<double>(size) / m.opSeconds / kGB : nan;
  m.p50Us = percentile(latency, 50);
  m.p99Us = percentile(latency, 99);
  m.cpuSecPerGB = bytes ? cpu / (static_cast<double>(bytes) / kGB) : nan;
  return m;
}

std::vector<double> pairedRatios(const std::vector<Measure>& a, const std::vector<Measure>& b,
                                 double Measure::*field) {
  std::vector<double> ratios;
  for (size_t r = 0; r < std::min(a.size(), b.size()); ++r) {
    double base = b[r].*field;
    if (base > 0) ratios.push_back(a[r].*field / base);
  }
  return ratios;
}

Report::Report(const Options& options, std::vector<size_t> sizes)
    : options_(options), sizes_(std::move(sizes)) {}

void Report::addRun(Pattern pattern, size_t config, int rep, const RunOutcome& outcome) {
  (void)rep;  // runs arrive in repetition order
  Series& series = series_[{pattern, config}];
  if (series.sizes.empty()) series.sizes.resize(sizes_.size());
  if (!outcome.ok) {
    series.failure = outcome.failure;
    return;
  }
  if (outcome.ranks.empty()) return;  // manual mode, rank != 0: nothing to report
  if (series.transport.empty()) series.transport = outcome.ranks[0].transport;
  for (size_t i = 0; i < sizes_.size(); ++i) {
    series.sizes[i].push_back(measureSize(pattern, outcome.ranks, i));
  }
}

const Report::Series* Report::find(Pattern pattern, size_t config) const {
  auto it = series_.find({pattern, config});
  return it == series_.end() ? nullptr : &it->second;
}

bool Report::failed(Pattern pattern, size_t config) const {
  const Series* series = find(pattern, config);
  return series && !series->failure.empty();
}

bool Report::anyFailure() const {
  return std::any_of(series_.begin(), series_.end(),
                     [](const auto& entry) { return !entry.second.failure.empty(); });
}

uint64_t Report::wrongTotal() const {
  uint64_t total = 0;
  for (const auto& [key, series] : series_) {
    for (const auto& reps : series.sizes) {
      for (const Measure& m : reps) total += m.wrongBytes + m.sizeErrors;
    }
  }
  return total;
}

void Report::printTables(FILE* out) const {
  for (Pattern pattern : options_.patterns) printTable(out, pattern);
}

void Report::printTable(FILE* out, Pattern pattern) const {
  const auto& configs = options_.configs;
  std::fprintf(out,
               "\n# %s: %d ranks, depth %d, %d timed + %d warm-up iterations per size, %d "
               "rep(s) interleaved, data check %s\n",
               patternName(pattern), options_.worldSize(),
               pattern == Pattern::kPingPong || pattern == Pattern::kTree ? 1 : options_.depth,
               options_.iters, options_.warmup, options_.reps, options_.check ? "on" : "off");
  std::fprintf(out,
               "# algbw = S/t (GB = 1e9 B), median (min-max) over reps; latency per message;"
               " cpu = user+sys s per GB sent+received\n");
  for (size_t c = 0; c < configs.size(); ++c) {
    const Series* series = find(pattern, c);
    std::string text = series ? series->transport : "";
    if (!configs[c].env.empty()) text += text.empty() ? "env" : "; env";
    for (const auto& [key, value] : configs[c].env) text += " " + key + "=" + value;
    if (series && !series->failure.empty())
      text += (text.empty() ? "" : "; ") + ("FAILED: " + series->failure);
    std::fprintf(out, "#   %-16s %s\n", configs[c].name.c_str(), text.c_str());
  }
  size_t baseline = referenceConfig(options_);
  const Series* base = baseline < configs.size() ? find(pattern, baseline) : nullptr;
  std::string ratioHead =
      base ? "  vs " + configs[baseline].name + ": algbw per-round median [95% CI], cpu" : "";
  std::fprintf(out, "#\n# %8s  %-16s %10s %-19s %9s %9s %9s %7s%s\n", "size", "config",
               "algbw GB/s", " (min-max)", "p50 us", "p99 us", "cpu s/GB", "#wrong",
               ratioHead.c_str());
  for (size_t i = 0; i < sizes_.size(); ++i) {
    for (size_t c = 0; c < configs.size(); ++c) {
      std::string sizeText = c == 0 ? formatSize(sizes_[i]) : "";
      const Series* series = find(pattern, c);
      if (!series || series->sizes[i].empty()) {
        std::fprintf(out, "  %8s  %-16s %10s\n", sizeText.c_str(), configs[c].name.c_str(),
                     series && !series->failure.empty() ? "failed" : "-");
        continue;
      }
      std::vector<double> bw, p50, p99, cpu;
      uint64_t wrong = 0;
      for (const Measure& m : series->sizes[i]) {
        bw.push_back(m.algbwGBps);
        p50.push_back(m.p50Us);
        p99.push_back(m.p99Us);
        cpu.push_back(m.cpuSecPerGB);
        wrong += m.wrongBytes + m.sizeErrors;
      }
      Summary b = summarize(bw);
      std::string range = " (" + number(b.min, "%.3g") + "-" + number(b.max, "%.3g") + ")";
      std::string ratio;
      if (base && c != baseline && !base->sizes[i].empty()) {
        std::vector<double> bwRatios =
            pairedRatios(series->sizes[i], base->sizes[i], &Measure::algbwGBps);
        Interval ci = medianInterval(bwRatios);
        ratio = "  " + number(summarize(bwRatios).median, "%5.2fx");
        if (std::isfinite(ci.low))
          ratio += " [" + number(ci.low, "%.2f") + "-" + number(ci.high, "%.2f") + "]";
        double cpuRatio =
            summarize(pairedRatios(series->sizes[i], base->sizes[i], &Measure::cpuSecPerGB)).median;
        ratio += ", cpu " + number(cpuRatio, "%.2fx");
      }
      std::fprintf(out, "  %8s  %-16s %10s %-19s %9s %9s %9s %7llu%s\n", sizeText.c_str(),
                   configs[c].name.c_str(), number(b.median, "%.4g").c_str(), range.c_str(),
                   number(summarize(p50).median, "%.1f").c_str(),
                   number(summarize(p99).median, "%.1f").c_str(),
                   number(summarize(cpu).median, "%.3f").c_str(),
                   static_cast<unsigned long long>(wrong), ratio.c_str());
    }
  }
}

}  // namespace bagua::net_perf
