// Element-wise reductions on CPU buffers of any DType (fp16/bf16 widened to
// fp32 for the arithmetic and rounded back to nearest-even), used by the Gloo
// communicator's reduce callbacks and by CPU algorithm steps.
#pragma once

#include <cstddef>

#include "runtime/comm/types.h"

namespace bagua {

// out[i] = op(a[i], b[i]) for n elements; kAvg reduces as kSum (the caller
// scales). `out` may alias `a` or `b`.
void reduceElements(DType dtype, ReduceOp op, void* out, const void* a, const void* b, size_t n);

// data[i] *= factor.
void scaleElements(DType dtype, void* data, size_t n, float factor);

}  // namespace bagua
