// CUDA reduction of consecutive slices with a bitwise op, the twin of
// reduceSlicesCpu (cpu_reduce.h) for band, bor and bxor on integer dtypes.
// NCCL has no bitwise reductions: the NCCL communicator collects every
// rank's slice (allgather, gather or alltoall) and reduces them with this.
//
// Bitwise ops act on bits alone, so the kernel works on raw 8-byte words
// when the buffers and the slice length allow it, else byte by byte; the
// result is the same for every integer dtype.
//
// Enqueues on `stream` and returns at once; pointers are device memory of
// the current device. Errors: a dtype that is not an integer, an op that is
// not bitwise or nSlices < 1 throw std::invalid_argument before anything is
// enqueued; a failed launch returns its cudaError_t.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/dtype.h"
#include "kernels/reduce_op.h"

namespace bagua::kernels {

// out[i] = op over s < nSlices of slices[s * n + i], n elements of dtype.
// out may be slice 0; it must not overlap the other slices.
cudaError_t reduceSlices(DType dtype, ReduceOp op, const void* slices, size_t n, int nSlices,
                         void* out, cudaStream_t stream);

}  // namespace bagua::kernels
