// The state of the plugin as NCCL sees it: the knobs it runs with, the
// devices (discovered once) and the engine shared by every comm. The process
// has one, which only the API layer reaches (api/process.h); tests may make
// their own with other knobs.
//
// Lifecycle: the engine's worker threads exist only while something holds it:
// a comm, or a v11 context (init .. finalize). When the last holder lets go,
// the threads are joined, so NCCL may dlclose the library after its last
// communicator (2.28 does) with no plugin thread left running. The library is
// linked -z nodelete, so dlclose leaves it mapped and a later load finds this
// state as it was; the next comm starts a new engine.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net_plugin/base/cpu_budget.h"
#include "net_plugin/base/devices.h"
#include "net_plugin/engine/engine.h"
#include "net_plugin/transport/rate_limiter.h"
#include "net_plugin/transport/send_comm.h"

namespace bagua::net {

class PluginState {
 public:
  // Runs with `params` (copied).
  explicit PluginState(const Params& params);
  // The same with a given CPU budget instead of this process's (tests).
  PluginState(const Params& params, const CpuBudget& budget);
  PluginState(const PluginState&) = delete;
  PluginState& operator=(const PluginState&) = delete;

  // Logs the knobs set in the environment, discovers devices and logs them,
  // once (later calls do nothing). Throws NetError.
  void init();
  // True once init() succeeded: this process uses Bagua-Net (NCCL ran its init).
  bool initialized() {
    std::lock_guard<std::mutex> lock(mutex_);
    return initialized_;
  }

  const Params& params() const { return params_; }

  // The devices found by init(); empty before it.
  const std::vector<NetDevice>& devices() const { return devices_; }

  // The shared engine, started if no holder is alive. Throws NetError.
  std::shared_ptr<Engine> engine();

  // The engine kind to start (BAGUA_NET_ENGINE or the automatic choice).
  EngineKind engineKind() const;
  // Worker threads the engine uses (BAGUA_NET_THREADS or the automatic choice).
  int engineThreads() const;
  // Microseconds workers poll before sleeping (BAGUA_NET_SPIN_US or automatic).
  int engineSpinUs() const;
  // Whether connections open a caller stream (BAGUA_NET_CALLER_STREAM; auto:
  // yes), and which messages it takes (send_comm.h).
  CallerStreamUse callerStream() const;
  // Whether test() of an unfinished request yields the CPU
  // (BAGUA_NET_TEST_YIELD or the automatic choice, decided once).
  bool testYields() const { return testYields_; }
  // Whether test() samples how long its caller waits for a CPU
  // (engine/caller_wait.h): where workers spin and BAGUA_NET_SPIN_BACKOFF is on.
  bool watchesCallerWait() const { return watchesCallerWait_; }
  // The CPUs this rank sizes the automatic choices by (usableCpus of the
  // process's budget and BAGUA_NET_LOCAL_RANKS), read once.
  int usableCpus() const { return usableCpus_; }
  // The same for one rank on the host (the CPUs the host's ranks share).
  int hostShareCpus() const { return hostShareCpus_; }

  // The rate limiter for ranks without a v11 context (NULL when unlimited).
  std::shared_ptr<RateLimiter> processLimiter();
  // A new limiter for one v11 communicator (NULL when unlimited).
  std::shared_ptr<RateLimiter> makeLimiter() const;

 private:
  // `cpus`, or fewer when BAGUA_NET_CPUS pins the workers to a shorter list.
  int workerCpus(int cpus) const;

  const Params params_;
  const int usableCpus_;
  const int hostShareCpus_;
  const bool testYields_;
  const bool watchesCallerWait_;
  std::mutex mutex_;
  bool initialized_ = false;
  std::vector<NetDevice> devices_;
  std::weak_ptr<Engine> engine_;
  std::shared_ptr<RateLimiter> processLimiter_;
  bool engineLogged_ = false;
};

}  // namespace bagua::net
