// Turns the ranks' raw measurements into the published numbers (formulas in
// report.cc and --help), and prints them: one table per pattern on stdout,
// and optionally every number as JSON.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tools/bagua_net_perf/launcher.h"
#include "tools/bagua_net_perf/options.h"

namespace bagua::net_perf {

// One repetition of one size in one configuration, across all ranks.
struct Measure {
  double opSeconds = 0;  // t
  double algbwGBps = 0;  // S / t / 1e9
  double p50Us = 0;
  double p99Us = 0;
  double cpuSecPerGB = 0;  // NaN when no bytes moved (size 0)
  uint64_t wrongBytes = 0;
  uint64_t sizeErrors = 0;
};

// Per repetition r, field(a[r]) / field(b[r]): a configuration against the
// baseline measured in the same round (runs interleave A B A B ...), so that
// a machine's drift between rounds cancels. Pairs only the common reps.
std::vector<double> pairedRatios(const std::vector<Measure>& a, const std::vector<Measure>& b,
                                 double Measure::*field);

// Folds the ranks' reports of one size into a Measure.
Measure measureSize(Pattern pattern, const std::vector<RankReport>& ranks, size_t sizeIndex);

class Report {
 public:
  Report(const Options& options, std::vector<size_t> sizes);

  // Records one run; a failed run marks its configuration failed for the pattern.
  void addRun(Pattern pattern, size_t config, int rep, const RunOutcome& outcome);
  bool failed(Pattern pattern, size_t config) const;
  bool anyFailure() const;
  uint64_t wrongTotal() const;  // wrong bytes plus size errors over everything

  void printTables(FILE* out) const;
  // Throws ToolError when the file cannot be written.
  void writeJson(const std::string& path) const;

 private:
  struct Series {
    std::string transport;
    std::string failure;
    std::vector<std::vector<Measure>> sizes;  // [size][rep]
  };

  const Series* find(Pattern pattern, size_t config) const;
  void printTable(FILE* out, Pattern pattern) const;

  const Options& options_;
  std::vector<size_t> sizes_;
  std::map<std::pair<Pattern, size_t>, Series> series_;
};

}  // namespace bagua::net_perf
