// Element-wise reductions of the collectives on CPU buffers, for every DType
// and ReduceOp: the Gloo communicator's reduce callbacks, and the reference
// of the CUDA slice reduction (reduce_slices_cuda.h).
//
// Arithmetic, per dtype:
//   int8, uint8, int32, int64  in their own type; a sum or product that
//       overflows wraps around like C++ unsigned arithmetic (two's complement
//       for the signed types), as NCCL's integer sums do.
//   float64  in double.  float32  in float.
//   float16, bfloat16  widened to fp32, combined, rounded back to nearest
//       even (float_bits.h: overflow to Inf, NaN to 0x7fff).
// min/max are std::min/std::max. Bitwise ops (band, bor, bxor) need an
// integer dtype. kAvg combines as a sum; finishAverageCpu then divides by the
// number of ranks: integers truncating toward zero (C++ `/`, what NCCL's
// ncclAvg does for integers), float64 by a double division, the other floats
// by multiplying with 1.0f / ranks in fp32.
//
// Errors: std::invalid_argument naming the dtype and op (a bitwise op on a
// float dtype) or the bad count, like the other kernels/ entry points.
#pragma once

#include <cstddef>

#include "kernels/dtype.h"
#include "kernels/reduce_op.h"

namespace bagua::kernels {

// Throws std::invalid_argument unless reductionSupported(dtype, reduceOp);
// `what` names the caller in the message.
void checkReduction(const char* what, DType dtype, ReduceOp reduceOp);

// out[i] = op(a[i], b[i]) for n elements (kAvg as kSum). out may alias a or b.
void reduceElementsCpu(DType dtype, ReduceOp op, void* out, const void* a, const void* b, size_t n);

// Turns n sums of `ranks` values into averages in place (ranks >= 1).
void finishAverageCpu(DType dtype, void* data, size_t n, int ranks);

// out[i] = op over s < nSlices of slices[s * n + i] (kAvg: the average), for
// nSlices >= 1 consecutive slices of n elements. out may be slice 0; it must
// not overlap the other slices.
void reduceSlicesCpu(DType dtype, ReduceOp op, const void* slices, size_t n, int nSlices,
                     void* out);

}  // namespace bagua::kernels
