// StepOps on a CUDA stream (step_ops.h): copies and kernels enqueued on
// `stream`; fences are events recorded on it.
#pragma once

#include <cuda_runtime_api.h>

#include "runtime/ops/step_ops.h"

namespace bagua {

std::unique_ptr<StepOps> cudaStepOps(cudaStream_t stream);

}  // namespace bagua
