// A Work that is a CUDA event recorded on a stream (NCCL's operations, the
// training's StepOps fences): a communicator's stream can wait for it on the
// GPU (Communicator::waitFor) instead of the host blocking until it is done.
#pragma once

#include <cuda_runtime_api.h>

namespace bagua {

class StreamEvent {
 public:
  virtual ~StreamEvent() = default;
  // The event; it stays valid while the Work lives.
  virtual cudaEvent_t event() const = 0;
};

}  // namespace bagua
