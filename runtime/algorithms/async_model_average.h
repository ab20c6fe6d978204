// Asynchronous model average (Bagua's AsyncModelAverageAlgorithm after its
// warm-up): the ranks train without waiting for each other while a
// background thread averages their weights every `interval`, on its own
// communicator (its own NCCL stream on GPUs).
//
// One round: (1) at the training's next step boundary (stepBoundary(), the
// forward pre-hook) the weights are copied into `snapshot` on the training's
// own stream; (2) the background thread sums every rank's snapshot (and
// every rank's "aborted" flag) with one allreduce each, off the training's
// stream; (3) at a later step boundary the training thread applies
// w <- w + sum / n - snapshot on its stream, which keeps the progress made
// since the snapshot and replaces the snapshot's part by the average.
//
// Consistency rule: the weights are only read and written at step
// boundaries, by the training thread, in its stream order: never while the
// optimizer writes them, never between a forward and its backward. The host
// never waits for communication in stepBoundary(); if a round is not done,
// the step just goes on.
//
// Stopping: abort() is collective. The rounds carry every rank's flag, so all
// ranks stop after the same round (a rank that aborts first keeps taking part
// until the last one has aborted, its weights still); then every rank
// averages once more synchronously, so all ranks end with identical weights.
// resume() starts rounds again, any number of times. A failed round (a dead
// peer, a timeout) stops the rounds; stepBoundary() and abort() rethrow it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/algorithms/registry.h"
#include "runtime/bucket/bucket_plan.h"
#include "runtime/comm/communicator.h"
#include "runtime/ops/device_ops.h"
#include "runtime/ops/step_ops.h"

namespace bagua {

class AsyncModelAverage {
 public:
  struct Options {
    std::chrono::milliseconds interval{500};
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  };

  // `comm`/`ops`: this algorithm's own communicator; `weights`: the tensors
  // to average (every rank the same list); `stepOps`: the training side.
  AsyncModelAverage(std::shared_ptr<Communicator> comm, std::shared_ptr<DeviceOps> ops,
                    std::vector<TensorSpec> weights, StepOpsFactory stepOps, Options options);
  ~AsyncModelAverage();
  AsyncModelAverage(const AsyncModelAverage&) = delete;
  AsyncModelAverage& operator=(const AsyncModelAverage&) = delete;

  // Starts the rounds (nothing if they run).
  void resume();
  // Collective: stops the rounds on every rank, then averages synchronously.
  // `stream`: the training's stream (CUDA), whose pending work is respected.
  void abort(uintptr_t stream);
  // The training thread at a step boundary: takes a requested snapshot or
  // applies a finished average; rethrows a failed round's error.
  void stepBoundary(uintptr_t stream);
  // Rounds whose average was applied since construction.
  size_t averages() const;
  bool running() const;

 private:
  enum class Phase { kIdle, kWantSnapshot, kSnapshotTaken, kResultReady, kApplied };

  void loop();
  bool round();                             // background thread; true: every rank aborted
  void serveBoundary(uintptr_t stream);     // under mutex_
  void waitPhase(std::unique_lock<std::mutex>& lock, Phase phase);  // background thread
  void averageNow(uintptr_t stream);        // abort(): the final synchronous average
  void stopThread();

  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<DeviceOps> ops_;
  std::vector<TensorSpec> weights_;
  StepOpsFactory stepOps_;
  Options options_;
  std::vector<BucketLayout> groups_;  // one per dtype: the weights' place in the buffers
  std::vector<std::unique_ptr<DeviceBuffer>> snapshot_, sum_;
  std::unique_ptr<DeviceBuffer> flag_;  // one float32: the number of ranks that aborted
  // flag_'s value, read once the round's fence finished.
  float readFlag();

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  Phase phase_ = Phase::kIdle;
  std::shared_ptr<Work> snapshotTaken_;
  bool aborting_ = false;  // this rank asked to stop
  bool stop_ = false;      // the destructor: leave now
  bool running_ = false;
  size_t averages_ = 0;
  std::exception_ptr error_;
  std::thread thread_;
};

// Its registry entry ("async"); the engine drives it directly (no factory).
AlgorithmInfo asyncModelAverageInfo();

}  // namespace bagua
