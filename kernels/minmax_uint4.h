// MinMaxUInt4: 4-bit block-wise min-max quantization (the "fp4" compression
// of DiLoCo's outer gradients). CPU reference here; the CUDA kernels with the
// same results, bit for bit, are in minmax_uint4_cuda.h. Ours (Bagua had
// only 8 bits): Streaming DiLoCo (arXiv 2501.18512) sends outer gradients in
// 4 bits; this is the simplest 4-bit code that the runtime's scatter-reduce /
// allgather path (ByteGrad's) can carry.
//
// A chunk of e elements is cut into blocks of kUInt4Block (512) elements
// (the last one may be shorter); each block has its own range, so one
// outlier costs precision in its block only (a chunk-wide range, as 8-bit
// ByteGrad uses, left most values of a multi-million-element chunk on one
// or two of 16 codes). Per block, in fp32 rounded to nearest even:
//   mn, mx = min and max of the block (widened to fp32; -0.0 becomes +0.0)
//   s = 15 / (mx - mn)                  (mx > mn)
//   q = min(max(rint((x - mn) * s), 0), 15)
//   x' = mn + q * ((mx - mn) / 15), rounded to the source dtype
// so |x' - x| <= (mx - mn) / 30 plus a few fp32 ulps of |x|. A constant
// block (mx == mn) has codes 0 and decodes to mn exactly. A block holding a
// NaN or +-Inf, or whose range overflows fp32, stores mn = mx = NaN and
// decodes to NaN everywhere (a bad outer gradient is not hidden).
//
// Layout of a compressed chunk of e elements, B = ceil(e / 512) blocks:
//   [0, 8B)                    per block: fp32 mn, fp32 mx
//   [8B, align32(8B))          zero
//   [align32(8B), +ceil(e/2))  codes, two per byte: element 2i in the low
//                              nibble of byte i, element 2i+1 in the high one
//   then zero up to align32(ceil(e/2))
// stride = compressedChunkBytes4(e) = align32(8B) + align32(ceil(e/2)):
// about e/2 + e/64 bytes, 0.52 bytes per element (fp32: 1/7.8 of the data).
// Every byte is written, so equal inputs give equal buffers on every rank.
//
// Arguments as minmax_uint8.h (float32, float16, bfloat16; chunkElems >= 1;
// 1 <= nChunks <= 65535; target < nChunks); invalid ones throw
// std::invalid_argument naming the value. Buffers must not overlap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace bagua::kernels {

// Elements per quantization block.
constexpr size_t kUInt4Block = 512;

// Bytes of one compressed chunk of chunkElems elements (a multiple of 32).
size_t compressedChunkBytes4(size_t chunkElems);

// target < 0: quantizes the nChunks chunks of src (nChunks * chunkElems
// elements) into dst (nChunks * compressedChunkBytes4 bytes). target >= 0:
// quantizes only chunk `target` of src into one compressed chunk at dst.
void compress4Cpu(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                  uint8_t* dst);

// Inverse of compress4Cpu with target < 0.
void decompress4Cpu(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks, void* dst);

}  // namespace bagua::kernels
