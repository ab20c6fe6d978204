// See rank_main.h. The environment is applied before anything is loaded:
// plugins read their knobs once, when loaded, so each configuration needs a
// fresh process that has not opened the library yet.
#include "tools/bagua_net_perf/rank_main.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "tools/bagua_net_perf/patterns.h"
#include "tools/bagua_net_perf/plugin_transport.h"
#include "tools/bagua_net_perf/rank_report.h"
#include "tools/bagua_net_perf/run_store.h"
#include "tools/bagua_net_perf/tcp_baseline.h"
#include "tools/bagua_net_perf/watchdog.h"
#include "tools/plugin_driver/errors.h"
#include "tools/plugin_driver/plugin_logger.h"

namespace bagua::net_perf {

using plugin_driver::kExitError;
using plugin_driver::kExitMismatch;
using plugin_driver::kExitOk;
using plugin_driver::setupPluginLogger;

namespace {

std::unique_ptr<Transport> makeTransport(const Options& options, const RankTask& task,
                                         RunStore& store) {
  if (task.config->tcpBaseline) {
    TcpTransportParams params;
    params.rank = task.rank;
    params.ifname = options.baselineIf;
    params.timeout = options.timeout;
    return std::make_unique<TcpTransport>(params, store);
  }
  PluginTransportParams params;
  params.path = task.config->plugin;
  params.abi = options.abi;
  params.rank = task.rank;
  params.dev = options.dev;
  params.flowsPerPeer = options.flowsPerPeer;
  params.commId = task.commId;
  params.timeout = options.timeout;
  return std::make_unique<PluginTransport>(params, store);
}

int measure(const Options& options, const RankTask& task, RunStore& store) {
  std::unique_ptr<Transport> transport = makeTransport(options, task, store);
  RankReport report;
  report.rank = task.rank;
  report.transport = transport->describe();
  PatternParams params;
  params.pattern = task.pattern;
  params.rank = task.rank;
  params.world = task.world;
  params.iters = options.iters;
  params.warmup = options.warmup;
  params.depth = options.depth;
  params.check = options.check;
  params.timeout = options.timeout;
  params.label = task.label;
  {
    PatternRunner runner(*transport, store, params);
    std::vector<size_t> sizes = sweepSizes(options);
    runner.setup(sizes.back());
    for (size_t size : sizes) report.sizes.push_back(runner.run(size));
    runner.teardown();
  }
  transport.reset();  // dlclose, as NCCL does when its last communicator ends
  store.put("result." + std::to_string(task.rank), serializeRankReport(report));
  for (const SizeResult& r : report.sizes) {
    if (r.wrongBytes || r.sizeErrors) return kExitMismatch;
  }
  return kExitOk;
}

}  // namespace

int runRank(const Options& options, const RankTask& task) {
  // Die with the launcher, so a killed benchmark leaves no ranks behind.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  signal(SIGPIPE, SIG_IGN);
  // As torchrun does (unless the caller's environment or the configuration
  // says otherwise): the plugin sizes each rank by its share of the CPUs the
  // ranks of this host share (BAGUA_NET_LOCAL_RANKS auto).
  setenv("LOCAL_WORLD_SIZE", std::to_string(task.world).c_str(), 0);
  for (const auto& [key, value] : task.config->env) setenv(key.c_str(), value.c_str(), 1);
  setupPluginLogger(task.rank);
  RunStore store(task.storeDir, options.timeout);
  std::string errorKey = "error." + std::to_string(task.rank);
  startWatchdog(task.rank, options.timeout, [&store, errorKey](const std::string& text) {
    try {
      store.put(errorKey, text);
    } catch (const std::exception&) {
      // stderr has the message
    }
  });
  try {
    return measure(options, task, store);
  } catch (const std::exception& e) {
    std::string message =
        "rank " + std::to_string(task.rank) + " (" + task.config->name + "): " + e.what();
    std::fprintf(stderr, "[bagua-net-perf] error: %s\n", message.c_str());
    try {
      store.put(errorKey, message);
    } catch (const std::exception&) {
      // The store is gone too; stderr has the message.
    }
    return kExitError;
  }
}

}  // namespace bagua::net_perf
