// PluginState: one-time discovery and the reference-counted engine.
#include "net_plugin/transport/plugin_state.h"

#include <algorithm>

#include "config.h"
#include "net_plugin/base/cpu_budget.h"
#include "net_plugin/base/hop_trace.h"
#include "net_plugin/base/log.h"
#include "net_plugin/base/status.h"

namespace bagua::net {

PluginState::PluginState(const Params& params) : PluginState(params, readCpuBudget()) {}

namespace {

// `params` with its automatic sizes resolved for a process that may use `cpus`.
Params withAutoSizes(Params params, int cpus) {
  params.minSplitBytes = minSplitBytesFor(params.minSplitBytes, cpus);
  return params;
}

}  // namespace

PluginState::PluginState(const Params& params, const CpuBudget& budget)
    : params_(withAutoSizes(params, bagua::net::usableCpus(budget, 1))),
      usableCpus_(bagua::net::usableCpus(budget, params.localRanks)),
      hostShareCpus_(bagua::net::usableCpus(budget, 1)),
      testYields_(params.testYield >= 0 ? params.testYield == 1 : autoTestYield(usableCpus_)),
      watchesCallerWait_(params.spinBackoff != 0 && engineKind() != EngineKind::kInline &&
                         engineSpinUs() > 0) {}

void PluginState::init() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (initialized_) return;
  const Params& p = params_;
  logParams();
  hoptrace::start(p.trace);
  devices_ = discoverDevices(p);
  if (devices_.empty()) {
    throw NetError(Status::kSystemError,
                   "no usable network interface" +
                       (p.socketIfname.empty() ? std::string()
                                               : " matches NCCL_SOCKET_IFNAME=" + p.socketIfname));
  }
  std::string list;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const NetDevice& d = devices_[i];
    list += " [" + std::to_string(i) + "]" + d.name + ":" + sockAddrToString(d.addr) + "<" +
            std::to_string(d.speedMbps) + "Mbps>";
  }
  BAGUA_INFO(NCCL_INIT | NCCL_NET, "Bagua-Net %s: using%s", BAGUA_VERSION, list.c_str());
  initialized_ = true;
}

EngineKind PluginState::engineKind() const {
  EngineKind configured = params_.engine;
  if (configured != EngineKind::kAuto) return configured;
  return autoEngineKind(usableCpus_, params_.zeroCopy);
}

int PluginState::engineThreads() const {
  int configured = params_.threads;
  if (configured > 0) return configured;
  // Sized by the CPUs the host's ranks share, not this rank's part: workers
  // that do not spin cost nothing while idle; at 4 ranks on 16 CPUs 16
  // workers each were level with or ahead of 8 at 16-256 MiB, and at 8 ranks
  // 16 and 2 were level (bench/results/net_ranks_gpu_2026-11-28).
  // Workers pinned to a list have its CPUs only: 16 workers on one listed
  // CPU would take turns on it.
  return autoWorkerThreads(workerCpus(hostShareCpus_));
}

int PluginState::engineSpinUs() const {
  int configured = params_.spinUs;
  if (configured >= 0) return configured;
  return autoSpinUs(workerCpus(usableCpus_), hostShareCpus_);
}

int PluginState::workerCpus(int cpus) const {
  if (params_.cpus.empty()) return cpus;
  return std::min(cpus, static_cast<int>(params_.cpus.size()));
}

CallerStreamUse PluginState::callerStream() const {
  // Set: 1 carries every message up to BAGUA_NET_MIN_SPLIT_BYTES, 0 none.
  if (params_.callerStream >= 0) return {params_.callerStream == 1, params_.minSplitBytes};
  // Auto, the inline engine (no workers, nothing to spin): as before the
  // workers' spin came into it, one where the automatic spin is 0.
  if (engineKind() == EngineKind::kInline) return {engineSpinUs() == 0, params_.minSplitBytes};
  // Auto: every connection has one. Where workers sleep it carries every message up to
  // BAGUA_NET_MIN_SPLIT_BYTES; where they spin, the smallest on a rank of
  // few CPUs (fewer within a run of messages) and none on one of many; and
  // every small message once the host's CPUs turn out busy (send_comm.h).
  if (engineSpinUs() > 0 && usableCpus_ < kCpusForWorkersAlone) {
    return {true, kCallerStreamBytesWhileSpinning, kCallerStreamBytesInARun};
  }
  return {true, engineSpinUs() > 0 ? 0 : params_.minSplitBytes};
}

std::shared_ptr<Engine> PluginState::engine() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<Engine> engine = engine_.lock();
  if (engine) return engine;
  std::string note;
  int threads = engineThreads();
  EngineKind kind = engineKind();
  EngineConfig config{kind, threads, engineSpinUs(), params_.cpus};
  config.spinBackoff = params_.spinBackoff != 0;
  engine = createEngine(config, &note);
  if (!note.empty()) BAGUA_WARN("%s", note.c_str());
  // One line per process at INFO; restarts after idle periods only at TRACE.
  if (!engineLogged_) {
    std::string why =
        kind == EngineKind::kInline
            ? " (experimental: no threads, the callers' isend/irecv/test move the bytes)"
        : params_.engine == EngineKind::kAuto && kind == EngineKind::kEpoll
            ? " (auto: fewer than " + std::to_string(kFewCpus) + " usable CPUs)"
            : "";
    BAGUA_INFO(NCCL_INIT | NCCL_NET,
               "%s engine%s, %d worker threads (spin %d us), %d streams per connection%s, "
               "%zu-byte chunks of messages above %zu bytes, sized for %d usable CPU%s%s%s%s",
               engine->name(), why.c_str(), engine->workerCount(), engineSpinUs(), params_.streams,
               callerStream().open ? " and a caller stream" : "", params_.chunkBytes,
               params_.minSplitBytes, usableCpus_, usableCpus_ == 1 ? "" : "s",
               params_.localRanks > 1
                   ? (" (" + std::to_string(params_.localRanks) + " ranks on this host)").c_str()
                   : "",
               !testYields_            ? ""
               : params_.testYield < 0 ? ", test() yields (auto: 2 or fewer usable CPUs)"
                                       : ", test() yields",
               params_.rateLimitMbps > 0
                   ? (", send rate limited to " + std::to_string(params_.rateLimitMbps) +
                      " Mbit/s per rank (BAGUA_NET_RATE_LIMIT_MBPS, testing aid)")
                         .c_str()
                   : "");
    engineLogged_ = true;
  } else {
    BAGUA_TRACE_LOG("%s engine restarted", engine->name());
  }
  engine_ = engine;
  return engine;
}

std::shared_ptr<RateLimiter> PluginState::makeLimiter() const {
  int mbps = params_.rateLimitMbps;
  return mbps > 0 ? std::make_shared<RateLimiter>(mbps * 1e6 / 8) : nullptr;
}

std::shared_ptr<RateLimiter> PluginState::processLimiter() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!processLimiter_) processLimiter_ = makeLimiter();
  return processLimiter_;
}

}  // namespace bagua::net
