// Work the training thread enqueues in its own order, outside any
// communicator: on CPU it runs at once on the calling thread; on CUDA it is
// enqueued on the caller's stream (the training's current stream), so it
// lands between the step's own kernels without the host waiting. The
// asynchronous model average takes its weight snapshots and applies its
// averages through these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/comm/types.h"
#include "runtime/comm/work.h"

namespace bagua {

class StepOps {
 public:
  virtual ~StepOps() = default;
  // dst <- src, `bytes` bytes.
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // out = a + alpha * b over n elements (out may alias a).
  virtual void addScaled(DType dtype, void* out, const void* a, const void* b, size_t n,
                         float alpha) = 0;
  // A Work that finishes once everything enqueued before it has.
  virtual std::shared_ptr<Work> fence(std::string what) = 0;
};

// StepOps on the caller's CUDA stream (an integer cudaStream_t; 0 on CPU).
using StepOpsFactory = std::function<std::unique_ptr<StepOps>(uintptr_t stream)>;

// The CPU ones: everything runs inline; fences are already finished.
std::unique_ptr<StepOps> cpuStepOps();

}  // namespace bagua
