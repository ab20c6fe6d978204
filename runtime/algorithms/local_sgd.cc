// LocalSgd: every H-th local step, an exact average of the weights.
#include "runtime/algorithms/local_sgd.h"

#include <cstdint>

#include "runtime/algorithms/gradient_allreduce.h"
#include "runtime/comm/in_flight.h"
#include "runtime/common/error.h"

namespace bagua {
namespace {

void checkSyncEvery(int64_t every) {
  BAGUA_ENFORCE(every >= 1, "local_sgd: sync_every must be at least 1, got " + std::to_string(every));
}

}  // namespace

LocalSgd::LocalSgd(std::shared_ptr<Communicator> comm, std::shared_ptr<DeviceOps> ops,
                   std::vector<TensorSpec> weights, StepOpsFactory stepOps, Options options)
    : comm_(std::move(comm)),
      ops_(std::move(ops)),
      weights_(std::move(weights), 1, SIZE_MAX / 2, 1, "local_sgd"),
      stepOps_(std::move(stepOps)),
      options_(options),
      schedule_{options.syncEvery, 1, 0} {
  checkSyncEvery(options_.syncEvery);
  for (const BucketLayout& b : weights_.buckets()) flat_.push_back(ops_->allocate(b.bytes()));
}

LocalSgd::~LocalSgd() {
  // A failed average was reported by afterStep(); one still running (a late
  // peer) keeps the flat buffers it uses.
  auto flat = std::make_shared<std::vector<std::unique_ptr<DeviceBuffer>>>(std::move(flat_));
  drainOrKeep(*ops_, {}, options_.timeout, std::move(flat), "local_sgd");
}

void LocalSgd::setSteps(int64_t steps) {
  BAGUA_ENFORCE(steps >= 0, "local_sgd: steps must be >= 0, got " + std::to_string(steps));
  steps_ = steps;
}

void LocalSgd::changeSyncEvery(int64_t every) {
  checkSyncEvery(every);
  schedule_ = SyncSchedule{every, 1, steps_};
}

void LocalSgd::restoreSchedule(int64_t every, int64_t base) {
  checkSyncEvery(every);
  BAGUA_ENFORCE(base >= 0 && base <= steps_, "local_sgd: the schedule's base step " +
                                                 std::to_string(base) + " is not in [0, " +
                                                 std::to_string(steps_) + "]");
  schedule_ = SyncSchedule{every, 1, base};
}

void LocalSgd::afterStep(uintptr_t stream) {
  ++steps_;
  if (!schedule_.syncs(0, steps_) || comm_->size() == 1) return;
  comm_->waitFor(stepOps_(stream)->fence("local_sgd: the optimizer step"));
  const std::vector<BucketLayout>& buckets = weights_.buckets();
  for (size_t b = 0; b < buckets.size(); ++b) {
    void* flat = flat_[b]->data();
    weights_.gather(*ops_, b, flat);
    comm_->allreduce(flat, buckets[b].paddedNumel, buckets[b].dtype, ReduceOp::kAvg);
    weights_.scatter(*ops_, b, flat);
  }
  // The next step must start from the average: wait for it here.
  ops_->fence("local_sgd: averaging the weights at local step " + std::to_string(steps_))
      ->wait(options_.timeout);
  ++syncs_;
  lastSync_ = steps_;
}

AlgorithmInfo localSgdInfo() {
  AlgorithmInfo info;
  info.name = "local_sgd";
  info.description =
      "local SGD: local optimizer steps, the weights averaged exactly every sync_every steps";
  info.communicates = Communicates::kWeights;
  info.trigger = Trigger::kAfterOptimizerStep;
  info.options = {
      {"sync_every", int64_t{16}, "local optimizer steps between two averages (H)"},
      {"warmup_steps", int64_t{0}, "synchronous gradient allreduce steps first"},
  };
  info.validate = [](const OptionMap& o) {
    BAGUA_ENFORCE(optionInt(o, "sync_every") >= 1,
                  "local_sgd: sync_every must be at least 1, got " +
                      std::to_string(optionInt(o, "sync_every")));
    BAGUA_ENFORCE(optionInt(o, "warmup_steps") >= 0,
                  "local_sgd: warmup_steps must be >= 0, got " +
                      std::to_string(optionInt(o, "warmup_steps")));
  };
  // The Reducer runs the warm-up's gradient allreduce; LocalSgd is driven by
  // the engine.
  info.factory = [](const OptionMap&) {
    return std::make_shared<GradientAllreduce>(GradientAllreduce::Options{true});
  };
  return info;
}

}  // namespace bagua
