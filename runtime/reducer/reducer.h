// The Reducer drives one algorithm over the registered tensors of a step:
// it plans buckets (checking every rank registered the same tensors), copies
// a bucket's tensors into its flat buffer once all of them are ready, and
// launches buckets strictly in order (bucket k only after buckets 0..k-1),
// so every rank issues the same collectives in the same order. Launching
// only enqueues; wait() is where the host blocks, once per step. A watchdog
// turns a bucket that does not finish within the timeout into an error that
// names what was pending.
//
// The results are copied back into the tensors as each bucket finishes, or,
// for algorithms on the weights (Algorithm::copiesBackAtWait), all at wait().
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/algorithms/algorithm.h"
#include "runtime/bucket/bucket_plan.h"
#include "runtime/store/store.h"

namespace bagua {

class Reducer {
 public:
  struct Options {
    size_t bucketBytes = 10u << 20;  // Bagua's default bucket size
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
    std::string storePrefix = "bagua/reducer";
    // The rank and size under which registrations are compared across ranks
    // (-1: the communicator's). A hierarchical reducer runs on the
    // intra-node communicator but checks against every rank of the job.
    int checkRank = -1;
    int checkSize = -1;
  };

  // Plans buckets for `tensors` and sets the algorithm up. Every rank must
  // call it with the same tensors (same count, sizes and dtypes, in the same
  // order); otherwise InvalidArgument names the first difference. Tensors
  // must be float32, float16 or bfloat16 (InvalidArgument otherwise, before
  // any communication).
  Reducer(std::shared_ptr<Communicator> comm, std::shared_ptr<DeviceOps> ops,
          std::shared_ptr<Algorithm> algorithm, std::vector<TensorSpec> tensors, Store& store,
          Options options);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Tensor `index` holds its final value for this step. Launches every
  // bucket that is now complete, in order. Marking a tensor twice in one
  // step is an error.
  void markReady(size_t index);
  // The same, with the tensor's current data pointer (frameworks may give a
  // gradient new storage every step, e.g. after zero_grad(set_to_none=True)).
  void markReady(size_t index, void* data);
  // Marks every tensor not yet marked (after backward: unused parameters).
  void markAllReady();
  // Blocks until every bucket of the step finished (marking the rest ready
  // first), then starts a new step. Rethrows the first error; TimeoutError
  // names the buckets still pending.
  void wait();

  const std::vector<BucketLayout>& buckets() const { return buckets_; }

  // The algorithm's per-element state (Algorithm::elementState) packed in
  // tensor order, each tensor's elements in a row, so that a Reducer with
  // other buckets over the same tensors takes it (loadElementState): an
  // autotune rebuild keeps ByteGrad's error-feedback residuals. nullptr when
  // the algorithm keeps none. Between steps only (after wait()); both wait
  // for their copies.
  std::unique_ptr<DeviceBuffer> saveElementState();
  // InvalidArgument when `packed` is not the size of these tensors' state
  // (checked first); then nothing to do when this algorithm keeps none.
  void loadElementState(DeviceBuffer& packed);

 private:
  void launchReadyBuckets();     // under mutex_
  void launch(size_t bucket);    // under mutex_
  void copyBack(size_t bucket);  // enqueues the bucket's results into its tensors
  void watchdog();
  // Where each tensor starts in the packed state (and, last, its size).
  std::vector<size_t> packedOffsets() const;
  // For every tensor slot of every bucket with state: fn(state of the slot,
  // offset of the tensor in the packed layout, bytes). False: no state.
  bool forEachStateSlot(const std::function<void(uint8_t*, size_t, size_t)>& fn);

  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<DeviceOps> ops_;
  std::shared_ptr<Algorithm> algorithm_;
  std::vector<TensorSpec> tensors_;
  Options options_;
  std::vector<BucketLayout> buckets_;
  std::vector<std::unique_ptr<DeviceBuffer>> storage_;
  std::vector<size_t> bucketOf_;  // tensor -> bucket

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<bool> ready_;                  // per tensor, this step
  std::vector<size_t> readyCount_;           // per bucket
  size_t nextLaunch_ = 0;                    // buckets [0, nextLaunch_) are launched
  size_t steps_ = 0;                         // wait() calls completed
  std::vector<std::shared_ptr<Work>> work_;  // per launched bucket
  std::vector<std::chrono::steady_clock::time_point> launchedAt_;
  std::string watchdogError_;
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace bagua
