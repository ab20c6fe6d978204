// An algorithm decides how each bucket is communicated. Bagua's algorithms
// differ in which tensors they communicate (gradients, weights, optimizer
// state), how buckets must be laid out, the operations per bucket and the
// point of the step they run at; which tensors and when are in the
// algorithm's registry entry (registry.h), read by the caller that registers
// the tensors; layout and operations are here.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/bucket/bucket_plan.h"
#include "runtime/comm/communicator.h"
#include "runtime/ops/device_ops.h"

namespace bagua {

// One bucket handed to Algorithm::communicate: its flattened buffer.
struct BucketContext {
  size_t index = 0;
  const BucketLayout* layout = nullptr;
  void* data = nullptr;  // layout->paddedNumel elements of layout->dtype
  Communicator* comm = nullptr;
  DeviceOps* ops = nullptr;
  size_t step = 0;  // steps the Reducer completed before this one (wait() calls)
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  // The name users pass ("gradient_allreduce", "bytegrad").
  virtual const char* name() const = 0;
  // Multiple of elements every bucket must be padded to.
  virtual size_t bucketAlignment(int worldSize) const {
    (void)worldSize;
    return 1;
  }
  // True: the Reducer copies a bucket's result back into its tensors only at
  // wait(), not as soon as the bucket is done (algorithms on the weights,
  // which the step keeps using until backward ends).
  virtual bool copiesBackAtWait() const { return false; }
  // Called once with the bucket plan, before the first communicate(): set up
  // per-bucket state (scratch buffers, error-feedback residuals).
  virtual void setup(const std::vector<BucketLayout>& buckets, Communicator& comm, DeviceOps& ops) {
    (void)buckets;
    (void)comm;
    (void)ops;
  }
  // Enqueues the bucket's communication (never waits); returns the Work that
  // finishes once the bucket holds its result.
  virtual std::shared_ptr<Work> communicate(BucketContext& bucket) = 0;
  // State the algorithm keeps per element from step to step (ByteGrad's
  // error-feedback residual): bucket `bucket`'s, laid out as the bucket
  // (paddedNumel elements of its dtype), or nullptr for none. A Reducer
  // that replaces one with other buckets over the same tensors carries it
  // over tensor by tensor (Reducer::saveElementState).
  virtual DeviceBuffer* elementState(size_t bucket) {
    (void)bucket;
    return nullptr;
  }
};

}  // namespace bagua
