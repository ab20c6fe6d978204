// Argument checks shared by the CPU and CUDA entry points of kernels/: bad
// input throws std::invalid_argument with the operation, the value and what
// was expected.
#pragma once

#include <cstddef>

#include "kernels/dtype.h"

namespace bagua::kernels {

// Largest chunk count (the CUDA grid's y dimension).
constexpr int kMaxChunks = 65535;

// Checks that dtype is float32, float16 or bfloat16 (the only types of the
// quantization and chunk kernels), 1 <= nChunks <= kMaxChunks, that nChunks
// chunks of chunkElems elements (and their compressed form) fit in size_t,
// and target: 0 <= target < nChunks when targetRequired, else target < nChunks
// (negative: all chunks).
void checkChunkArgs(const char* op, DType dtype, size_t chunkElems, int nChunks, int target,
                    bool targetRequired);

// Checks that p (the buffer `name`) is a multiple of `alignment` bytes.
void checkAligned(const char* op, const char* name, const void* p, size_t alignment);

// Checks that dtype is a float type (as above) and n elements fit in size_t bytes.
void checkElementArgs(const char* op, DType dtype, size_t n);

}  // namespace bagua::kernels
