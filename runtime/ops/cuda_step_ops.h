// StepOps on a CUDA stream (step_ops.h): copies and kernels enqueued on
// `stream`; fences are events recorded on it.
#pragma once

#include <cuda_runtime_api.h>

#include "runtime/ops/step_ops.h"

namespace bagua {

// `device`: the stream's CUDA device, made current for each operation (a
// kernel or event on another device's stream fails).
std::unique_ptr<StepOps> cudaStepOps(cudaStream_t stream, int device);

}  // namespace bagua
