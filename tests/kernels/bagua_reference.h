// Bagua's MinMaxUInt8 and reduce_chunk_inplace re-stated as plainly as
// possible, one scalar at a time (as tests/internal/compressor.py does, with
// the precision of each step taken from bagua_kernels.cu: the scale and the
// lower bound in double, then float), for cross-checking the real code.
// fp16 goes through the compiler's _Float16 (or, where it has none, a
// rounding in double written here), bf16 through a rounding written here, so
// these share nothing with kernels/ but the dtype enum.
// Only finite chunks: Bagua has no NaN policy to compare with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/dtype.h"

namespace bagua::kernels::testing {

struct ReferenceChunk {
  uint32_t minBits;            // min in the source dtype (zero-extended)
  uint32_t maxBits;            // max in the source dtype
  std::vector<uint8_t> codes;  // chunkElems codes
};

// Compresses one chunk of n elements of dtype.
ReferenceChunk referenceCompress(DType dtype, const void* chunk, size_t n);

// Bagua's decoder: element bits in the dtype for each code.
std::vector<uint32_t> referenceDecompress(DType dtype, const ReferenceChunk& chunk);

// Bagua's reduce_chunk_inplace: element bits of the reduced chunk.
std::vector<uint32_t> referenceReduce(DType dtype, const void* data, size_t chunkElems, int nChunks,
                                      bool average);

// fp32 -> dtype bits, round to nearest even, and back.
uint32_t referenceFromFloat(DType dtype, float f);
float referenceToFloat(DType dtype, uint32_t bits);

}  // namespace bagua::kernels::testing
