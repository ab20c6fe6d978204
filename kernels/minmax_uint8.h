// MinMaxUInt8: Bagua's chunk-wise 8-bit min-max quantization (ByteGrad), and
// the chunk reduction around it. CPU reference here; the CUDA kernels with
// the same semantics, bit for bit, are in minmax_uint8_cuda.h.
//
// Source: BaguaSys/bagua rust/bagua-core/bagua-core-internal/kernels/
// bagua_kernels.cu (compress_float_to_uint8, decompress_uint8_to_float,
// reduce_chunk_inplace) and tests/internal/compressor.py. Re-stated, not copied.
//
// Formula, per chunk, every step in fp32 rounded to nearest even
// (the arithmetic itself: minmax_uint8_math.h):
//   mn, mx = min and max of the chunk, in the source dtype (exact)
//   s = 255 / (mx - mn + 1e-7f)        // ((mx - mn) + eps), then one division
//   U = rint(mx * s)                   // ties to even
//   L = U - 255
//   q = uint8(min(rint(x * s), U) - L) // x widened to fp32 first
//   x' = (q + L) / s, rounded to the source dtype (nearest even)
// uint8(v) is what nvcc makes of Bagua's implicit conversion: truncate,
// saturate to [0, 2^32-1] (NaN -> 0), keep the low byte. mx is on the grid;
// |x' - x| <= (mx - mn + eps) / 510 plus a few fp32 ulps of |x| while
// |mx * s| < 2^24. Beyond (max |x| > ~65000 (mx - mn)) L is rounded, codes
// may wrap 256 -> 0 and an error can reach mx - mn: Bagua's, kept.
//
// Layout of a compressed buffer: chunk c at byte c * compressedChunkBytes(e),
// e = chunkElems; stride = align32(e) + 32:
//   [0, 32)       header: min at byte 0 and max at byte sizeof(T), both in the
//                 source dtype (Bagua's layout); then zeros up to byte 24;
//                 uint32 ~orderKey(min) at 24 and orderKey(max) at 28 (work
//                 space of the CUDA min/max; Bagua never reads past 2*sizeof(T)
//                 and leaves these bytes uninitialised).
//   [32, 32 + e)  the codes, one byte per element
//   [32 + e, stride)  zero padding
// Every byte is written, so equal inputs give equal buffers on every rank.
//
// Deliberate differences from Bagua (its decoder reads our buffers unchanged):
//   * NaN/Inf: a chunk holding any NaN or +-Inf gets min = max = NaN (0x7fff
//     or 0x7fffffff) and codes 0, and decodes to NaN everywhere, so a bad
//     gradient propagates like an fp32 allreduce would and AMP's inf check
//     fires; Bagua decoded such chunks to garbage, -Inf or NaN. A decoder
//     seeing a non-finite min or max (also from Bagua) writes NaN.
//   * A constant chunk (min == max) decodes to min exactly. Bagua's decoder
//     gives min - ~1e-7 (s = 2.55e9, and q = 256 wraps to 0) and +-Inf for
//     |min| > ~1.3e29 (x * s overflows); we still write Bagua's codes.
//   * min/max of a chunk holding both -0.0 and +0.0 are -0.0 and +0.0 here;
//     Bagua's CUB reduction picked either, by reduction order.
//   * Every NaN written (decode, reduce, scale) is the canonical positive quiet
//     NaN, so CPU and GPU agree on its bits.
//   * bf16 is ours (Bagua had fp32 and fp16): like fp16, computed in fp32.
// Kept from Bagua: a finite chunk whose range overflows fp32 (possible for
// fp32 and bf16 only) gets s = 0 and decodes to NaN; there is no lower clamp
// (a code below 0 saturates to 0). The CPU assumes no flush-to-zero mode.
//
// Reduction (reduceChunks): fp32 sum in Bagua's order (row t
// of Y = 2/4/8/16/32 rows, for n <= 4/8/16/32/more chunks, sums chunks t, t+Y,
// ... from 0.0f; rows are added pairwise by a tree), divided by n in fp32 when
// averaging, rounded to the dtype. So results equal Bagua's bit for bit.
//
// Arguments: dtype float32, float16 or bfloat16 (others, e.g. int32, throw),
// chunkElems >= 1, 1 <= nChunks <= 65535, target < nChunks; invalid ones
// throw std::invalid_argument naming the value. Buffers must not
// overlap except where said.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace bagua::kernels {

// Bytes of one compressed chunk of chunkElems elements: align32(chunkElems) + 32.
size_t compressedChunkBytes(size_t chunkElems);

// target < 0: quantizes the nChunks chunks of src (nChunks * chunkElems
// elements) into dst (nChunks * compressedChunkBytes bytes). target >= 0:
// quantizes only chunk `target` of src into one compressed chunk at dst.
void compressCpu(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                 uint8_t* dst);

// Inverse of compress with target < 0: nChunks compressed chunks into
// nChunks * chunkElems elements of dst.
void decompressCpu(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks, void* dst);

// Sum (average: mean) of the nChunks consecutive chunks of data, fp32
// accumulation in Bagua's order, written into chunk `target` (0 <= target).
void reduceChunksCpu(DType dtype, void* data, size_t chunkElems, int nChunks, int target,
                     bool average);

// data[i] = data[i] * factor (fp32 multiply, rounded to the dtype).
void scaleCpu(DType dtype, void* data, size_t n, float factor);

// out[i] = a[i] + alpha * b[i] (fp32, two roundings, no FMA; out may alias a or b).
void addScaledCpu(DType dtype, void* out, const void* a, const void* b, size_t n, float alpha);

// out[i] = a[i] - b[i] (fp32, rounded to the dtype), or 0 where that is not
// finite: error feedback's residual (what a rank meant to send minus what its
// codes decode to). A chunk that held an Inf or NaN decodes to NaN (an
// overflowing loss-scaled step, which the scaler skips); its residual is
// dropped instead of carried into every later step. out may alias a or b.
void residualCpu(DType dtype, void* out, const void* a, const void* b, size_t n);

}  // namespace bagua::kernels
