// AsyncModelAverage: background rounds, step-boundary snapshots and updates.
#include "runtime/algorithms/async_model_average.h"

#include <cstring>

#include "runtime/algorithms/gradient_allreduce.h"
#include "runtime/comm/in_flight.h"
#include "runtime/common/error.h"

namespace bagua {
namespace {

// What a rank adds to the round's flag (the number of ranks aborting).
const float kNotAborting = 0.0f;
const float kAborting = 1.0f;

uint8_t* at(DeviceBuffer& buffer, const BucketLayout& group, const BucketSlot& slot) {
  return static_cast<uint8_t*>(buffer.data()) + slot.offset * dtypeSize(group.dtype);
}

}  // namespace

AsyncModelAverage::AsyncModelAverage(std::shared_ptr<Communicator> comm,
                                     std::shared_ptr<DeviceOps> ops,
                                     std::vector<TensorSpec> weights, StepOpsFactory stepOps,
                                     Options options)
    : comm_(std::move(comm)),
      ops_(std::move(ops)),
      weights_(std::move(weights)),
      stepOps_(std::move(stepOps)),
      options_(options) {
  BAGUA_ENFORCE(options_.interval.count() > 0,
                "async: sync_interval_ms must be positive, got " +
                    std::to_string(options_.interval.count()));
  // One buffer per dtype, whole (no bucket size limit): one allreduce each.
  groups_ = planBuckets(weights_, SIZE_MAX / 2, 1);
  for (const BucketLayout& g : groups_) {
    snapshot_.push_back(ops_->allocate(g.bytes()));
    sum_.push_back(ops_->allocate(g.bytes()));
  }
  flag_ = ops_->allocate(sizeof(float));
}

AsyncModelAverage::~AsyncModelAverage() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  stopThread();
  // A round that timed out left its collectives queued behind a late peer:
  // they keep the snapshot, sum and flag buffers until they end.
  struct Buffers {
    std::vector<std::unique_ptr<DeviceBuffer>> snapshot, sum;
    std::unique_ptr<DeviceBuffer> flag;
  };
  auto buffers = std::make_shared<Buffers>(
      Buffers{std::move(snapshot_), std::move(sum_), std::move(flag_)});
  drainOrKeep(*ops_, {}, options_.timeout, std::move(buffers), "async model average");
}

void AsyncModelAverage::stopThread() {
  if (thread_.joinable()) thread_.join();
}

void AsyncModelAverage::resume() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_) std::rethrow_exception(error_);
  if (running_) return;
  if (thread_.joinable()) thread_.join();  // a finished loop (after abort)
  aborting_ = false;
  phase_ = Phase::kIdle;
  running_ = true;
  thread_ = std::thread([this] { loop(); });
}

bool AsyncModelAverage::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

size_t AsyncModelAverage::averages() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return averages_;
}

void AsyncModelAverage::loop() {
  try {
    while (!round()) {
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stop_) {
      // A CUDA failure is this process's own (wrong device, out of memory):
      // no hint of a dead peer, and it stays a CudaError.
      const bool cuda = dynamic_cast<const CudaError*>(&e) != nullptr;
      std::string what = std::string("asynchronous model average: a background round failed") +
                         (cuda ? ": " : " (a peer died or stopped answering?): ") + e.what();
      if (cuda) {
        error_ = std::make_exception_ptr(CudaError(what, __FILE__, __LINE__));
      } else if (dynamic_cast<const TimeoutError*>(&e) != nullptr) {
        error_ = std::make_exception_ptr(TimeoutError(what, __FILE__, __LINE__));
      } else {
        error_ = std::make_exception_ptr(CommError(what, __FILE__, __LINE__));
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    phase_ = Phase::kIdle;
  }
  cv_.notify_all();
}

void AsyncModelAverage::waitPhase(std::unique_lock<std::mutex>& lock, Phase phase) {
  cv_.wait(lock, [&] { return stop_ || phase_ == phase; });
  if (stop_) BAGUA_THROW(CommError, "async: stopped");
}

bool AsyncModelAverage::round() {
  std::shared_ptr<Work> snapshot;
  bool aborted = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // Wait out the interval, unless this rank is stopping (then go fast:
    // the others may be waiting for our flag).
    cv_.wait_for(lock, options_.interval, [&] { return stop_ || aborting_; });
    if (stop_) BAGUA_THROW(CommError, "async: stopped");
    phase_ = Phase::kWantSnapshot;
    cv_.notify_all();
    waitPhase(lock, Phase::kSnapshotTaken);
    snapshot = snapshotTaken_;
    aborted = aborting_;
  }
  // The collectives run here, off the training's stream and thread.
  comm_->waitFor(snapshot);
  for (size_t g = 0; g < groups_.size(); ++g) {
    ops_->copy(sum_[g]->data(), snapshot_[g]->data(), groups_[g].bytes());
    comm_->allreduce(sum_[g]->data(), groups_[g].paddedNumel, groups_[g].dtype, ReduceOp::kSum);
  }
  // The flag's source has static storage: a round that times out leaves this
  // copy queued behind the peers' collectives (the CPU worker runs it once a
  // late peer arrives), after the round's stack is gone.
  ops_->copy(flag_->data(), aborted ? &kAborting : &kNotAborting, sizeof(float));
  comm_->allreduce(flag_->data(), 1, DType::kFloat32, ReduceOp::kSum);
  ops_->fence("async: averaging " + std::to_string(weights_.size()) + " weights")
      ->wait(options_.timeout);
  const float abortedRanks = readFlag();
  std::unique_lock<std::mutex> lock(mutex_);
  phase_ = Phase::kResultReady;
  cv_.notify_all();
  waitPhase(lock, Phase::kApplied);
  ++averages_;
  return abortedRanks >= static_cast<float>(comm_->size());
}

float AsyncModelAverage::readFlag() {
  float value = 0;
  if (ops_->device() == Device::kCpu) {
    std::memcpy(&value, flag_->data(), sizeof(float));
  } else {
    // After the fence: a copy into pageable memory returns once done, so one
    // queued before the fence's wait blocked this thread behind a hung
    // allreduce (a dead peer), past every timeout.
    ops_->copy(&value, flag_->data(), sizeof(float));
  }
  return value;
}

void AsyncModelAverage::serveBoundary(uintptr_t stream) {
  if (phase_ == Phase::kWantSnapshot) {
    auto step = stepOps_(stream);
    for (size_t g = 0; g < groups_.size(); ++g) {
      for (const BucketSlot& s : groups_[g].slots) {
        const TensorSpec& t = weights_[s.tensor];
        step->copy(at(*snapshot_[g], groups_[g], s), t.data, t.numel * dtypeSize(t.dtype));
      }
    }
    snapshotTaken_ = step->fence("async: weight snapshot");
    phase_ = Phase::kSnapshotTaken;
    cv_.notify_all();
  } else if (phase_ == Phase::kResultReady) {
    auto step = stepOps_(stream);
    // w += sum / n - snapshot, as d = sum - n * snapshot (small: rounded at
    // its own scale), then w += d / n: one rounding at w's scale. Adding
    // sum / n first rounded at about 2w in fp16/bf16, then again.
    const float n = static_cast<float>(comm_->size());
    for (size_t g = 0; g < groups_.size(); ++g) {
      for (const BucketSlot& s : groups_[g].slots) {
        const TensorSpec& t = weights_[s.tensor];
        void* drift = at(*sum_[g], groups_[g], s);
        step->addScaled(t.dtype, drift, drift, at(*snapshot_[g], groups_[g], s), t.numel, -n);
        step->addScaled(t.dtype, t.data, t.data, drift, t.numel, 1.0f / n);
      }
    }
    phase_ = Phase::kApplied;
    cv_.notify_all();
  }
}

void AsyncModelAverage::stepBoundary(uintptr_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_) std::rethrow_exception(error_);
  serveBoundary(stream);
}

void AsyncModelAverage::abort(uintptr_t stream) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (running_) {
    aborting_ = true;
    cv_.notify_all();
    // Serve the rounds still to come (every rank takes part until all abort).
    while (running_) {
      serveBoundary(stream);
      cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
  }
  lock.unlock();
  stopThread();
  lock.lock();
  if (error_) std::rethrow_exception(error_);
  lock.unlock();
  averageNow(stream);
}

void AsyncModelAverage::averageNow(uintptr_t stream) {
  auto step = stepOps_(stream);
  comm_->waitFor(step->fence("async: the training's pending work"));
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (const BucketSlot& s : groups_[g].slots) {
      const TensorSpec& t = weights_[s.tensor];
      ops_->copy(at(*sum_[g], groups_[g], s), t.data, t.numel * dtypeSize(t.dtype));
    }
    comm_->allreduce(sum_[g]->data(), groups_[g].paddedNumel, groups_[g].dtype, ReduceOp::kAvg);
    for (const BucketSlot& s : groups_[g].slots) {
      const TensorSpec& t = weights_[s.tensor];
      ops_->copy(t.data, at(*sum_[g], groups_[g], s), t.numel * dtypeSize(t.dtype));
    }
  }
  ops_->fence("async: the final average")->wait(options_.timeout);
}

AlgorithmInfo asyncModelAverageInfo() {
  AlgorithmInfo info;
  info.name = "async";
  info.description = "asynchronous model average: weights averaged in the background";
  info.communicates = Communicates::kWeights;
  info.trigger = Trigger::kBackground;
  info.options = {
      {"peer_selection_mode", std::string("all"), "all (the only mode)"},
      {"sync_interval_ms", int64_t{500}, "milliseconds between two averages"},
      {"warmup_steps", int64_t{0}, "synchronous gradient allreduce steps first"},
  };
  info.validate = [](const OptionMap& o) {
    BAGUA_ENFORCE(optionString(o, "peer_selection_mode") == "all",
                  "async: peer_selection_mode must be 'all' (the only mode of asynchronous "
                  "model average), got '" +
                      optionString(o, "peer_selection_mode") + "'");
    BAGUA_ENFORCE(optionInt(o, "sync_interval_ms") > 0,
                  "async: sync_interval_ms must be positive, got " +
                      std::to_string(optionInt(o, "sync_interval_ms")));
    BAGUA_ENFORCE(optionInt(o, "warmup_steps") >= 0,
                  "async: warmup_steps must be >= 0, got " +
                      std::to_string(optionInt(o, "warmup_steps")));
  };
  // The Reducer runs the warm-up's synchronous gradient allreduce; the
  // averaging itself is AsyncModelAverage, driven by the engine.
  info.factory = [](const OptionMap&) {
    return std::make_shared<GradientAllreduce>(GradientAllreduce::Options{true});
  };
  return info;
}

}  // namespace bagua
