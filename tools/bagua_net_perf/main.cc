// bagua-net-perf: measures any NCCL net plugin through its ABI with host
// memory, against a plain-TCP baseline, the way nccl-tests measures NCCL.
// This file runs the schedule (pattern x repetition x configuration, the
// configurations interleaved A B A B ...) and prints the report; usage.cc
// documents the flags, report.cc the formulas.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "tools/bagua_net_perf/launcher.h"
#include "tools/bagua_net_perf/options.h"
#include "tools/bagua_net_perf/report.h"
#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {

using plugin_driver::errnoText;
using plugin_driver::kExitError;
using plugin_driver::kExitMismatch;
using plugin_driver::kExitOk;
using plugin_driver::kExitUsage;
using plugin_driver::UsageError;

namespace {

std::string makeStoreRoot(const Options& options) {
  if (options.manual()) return options.store;
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/bagua-net-perf.XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) TOOL_THROW(ToolError, errnoText("mkdtemp " + templ, errno));
  return templ;
}

int runAll(const Options& options) {
  std::vector<size_t> sizes = sweepSizes(options);
  std::string storeRoot = makeStoreRoot(options);
  Report report(options, sizes);
  int runs = static_cast<int>(options.patterns.size() * options.configs.size()) * options.reps;
  int run = 0;
  for (Pattern pattern : options.patterns) {
    for (int rep = 0; rep < options.reps; ++rep) {
      for (size_t c = 0; c < options.configs.size(); ++c) {
        const Config& config = options.configs[c];
        ++run;
        if (report.failed(pattern, c)) continue;  // one failure is enough per pattern
        std::fprintf(stderr, "[bagua-net-perf] run %d/%d: %s, config %s, rep %d/%d\n", run, runs,
                     patternName(pattern), config.name.c_str(), rep + 1, options.reps);
        RunSpec spec{pattern, &config, rep, storeRoot};
        RunOutcome outcome = launchRun(options, spec);
        if (!outcome.ok) {
          std::fprintf(stderr, "[bagua-net-perf] %s failed: %s\n", config.name.c_str(),
                       outcome.failure.c_str());
        }
        report.addRun(pattern, c, rep, outcome);
      }
    }
  }
  if (!options.manual()) {
    std::error_code ignored;
    std::filesystem::remove_all(storeRoot, ignored);
  }
  if (options.manual() && options.rank != 0) {
    return report.anyFailure() ? kExitError : kExitOk;
  }
  report.printTables(stdout);
  std::fflush(stdout);
  if (!options.jsonPath.empty()) report.writeJson(options.jsonPath);
  uint64_t wrong = report.wrongTotal();
  if (report.anyFailure()) {
    std::fprintf(stderr,
                 "[bagua-net-perf] FAILED: at least one configuration failed (see above)\n");
    return kExitError;
  }
  if (wrong) {
    std::fprintf(stderr, "[bagua-net-perf] FAILED: %llu wrong byte(s) or sizes in the data check\n",
                 static_cast<unsigned long long>(wrong));
    return kExitMismatch;
  }
  return kExitOk;
}

}  // namespace
}  // namespace bagua::net_perf

int main(int argc, char** argv) {
  using namespace bagua::net_perf;
  Options options;
  try {
    if (!parseOptions(argc, argv, &options)) return kExitOk;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "bagua-net-perf: %s (see --help)\n", e.what());
    return kExitUsage;
  }
  try {
    return runAll(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bagua-net-perf: error: %s\n", e.what());
    return kExitError;
  }
}
