// An algorithm decides how each bucket is communicated. Bagua's algorithms
// differ in which tensors they communicate (gradients, weights, optimizer
// state), how buckets must be laid out, the operations per bucket and the
// hook points they use; the first two are the caller's (the Python layer
// registers gradients for the gradient algorithms), the rest is here.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/bucket/bucket_plan.h"
#include "runtime/comm/communicator.h"
#include "runtime/ops/device_ops.h"

namespace bagua {

// Where the runtime calls into an algorithm during a training step.
enum class Hook {
  kTensorReady,        // a registered tensor's value is final for this step
  kAfterBackward,      // all gradients of the step are ready
  kAfterOptimizerStep  // the optimizer updated the weights
};

// One bucket handed to Algorithm::communicate: its flattened buffer.
struct BucketContext {
  size_t index = 0;
  const BucketLayout* layout = nullptr;
  void* data = nullptr;  // layout->paddedNumel elements of layout->dtype
  Communicator* comm = nullptr;
  DeviceOps* ops = nullptr;
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
  // The hook at which buckets are communicated (gradient algorithms: as
  // their tensors become ready, overlapping the backward pass).
  virtual Hook communicationHook() const { return Hook::kTensorReady; }
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
};

}  // namespace bagua
