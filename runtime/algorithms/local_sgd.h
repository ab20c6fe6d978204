// Local SGD (post-local SGD, Lin et al. 2018, arXiv 1808.07217; PyTorch's
// PostLocalSGDOptimizer with PeriodicModelAverager): after the warm-up (the
// caller's gradient allreduce), every rank takes purely local optimizer
// steps, and after every H-th of them (SyncSchedule with F = 1) the weights
// are replaced by their exact average over the ranks (allreduce, mean), so
// all ranks hold bit-identical weights after each sync.
//
// afterStep() runs on the training thread after the optimizer step. On a
// sync step it orders the communicator after the work already on the
// training's stream, copies the weights into one flat buffer per dtype (one
// allreduce for the whole model, as PyTorch's averager: NCCL pipelines one
// large operation best), averages it, copies the average back, and blocks
// until that is done (the next step must start from the average); other
// steps only count. sync_every can change between steps (autotune): the
// schedule then restarts from that step. Bytes sent per sync and rank: a ring allreduce of the
// weights, 2 (n-1)/n x model bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/algorithms/registry.h"
#include "runtime/algorithms/weight_fragments.h"
#include "runtime/comm/communicator.h"
#include "runtime/ops/device_ops.h"
#include "runtime/ops/step_ops.h"

namespace bagua {

class LocalSgd {
 public:
  struct Options {
    int64_t syncEvery = 16;
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  };

  LocalSgd(std::shared_ptr<Communicator> comm, std::shared_ptr<DeviceOps> ops,
           std::vector<TensorSpec> weights, StepOpsFactory stepOps, Options options);
  ~LocalSgd();
  LocalSgd(const LocalSgd&) = delete;
  LocalSgd& operator=(const LocalSgd&) = delete;

  // After the optimizer step of a local step (`stream`: the training's).
  void afterStep(uintptr_t stream);
  // Local steps taken (restored from a checkpoint with setSteps).
  int64_t steps() const { return steps_; }
  void setSteps(int64_t steps);
  // Syncs done since construction, and the local step of the last one (0: none).
  int64_t syncs() const { return syncs_; }
  int64_t lastSyncStep() const { return lastSync_; }

  // sync_every (autotune): from now on every H-th step counted from this
  // one. InvalidArgument when every < 1.
  void changeSyncEvery(int64_t every);
  int64_t syncEvery() const { return schedule_.every; }
  // The step the schedule counts from (0, or the last change).
  int64_t scheduleBase() const { return schedule_.base; }
  // A checkpoint's schedule (after setSteps): 0 <= base <= steps().
  void restoreSchedule(int64_t every, int64_t base);

 private:
  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<DeviceOps> ops_;
  WeightFragments weights_;
  StepOpsFactory stepOps_;
  Options options_;
  SyncSchedule schedule_;
  std::vector<std::unique_ptr<DeviceBuffer>> flat_;  // per bucket
  int64_t steps_ = 0;
  int64_t syncs_ = 0;
  int64_t lastSync_ = 0;
};

// Its registry entry ("local_sgd"). The factory builds the warm-up's
// gradient allreduce; the engine drives LocalSgd itself after it.
AlgorithmInfo localSgdInfo();

}  // namespace bagua
