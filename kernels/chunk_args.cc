// Argument checks of kernels/ entry points.
#include "kernels/chunk_args.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace bagua::kernels {
namespace {

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string("bagua::kernels::") + op + ": " + what);
}

void checkDType(const char* op, DType dtype) {
  if (isAlgorithmDType(dtype)) return;
  const std::string name = dtypeSize(dtype) != 0
                               ? std::string("dtype ") + dtypeName(dtype)
                               : "unknown dtype " + std::to_string(static_cast<int>(dtype));
  fail(op, name + " is not supported, expected float32, float16 or bfloat16");
}

}  // namespace

void checkChunkArgs(const char* op, DType dtype, size_t chunkElems, int nChunks, int target,
                    bool targetRequired) {
  checkDType(op, dtype);
  if (nChunks < 1 || nChunks > kMaxChunks) {
    fail(op, "nChunks = " + std::to_string(nChunks) +
                 ", expected 1 <= nChunks <= " + std::to_string(kMaxChunks));
  }
  // 64 bytes of slack covers the alignment and header of a compressed chunk.
  if (chunkElems > (SIZE_MAX - 64) / 4 / static_cast<size_t>(nChunks)) {
    fail(op, "chunkElems = " + std::to_string(chunkElems) +
                 " times nChunks = " + std::to_string(nChunks) + " does not fit in memory");
  }
  if (target >= nChunks || (targetRequired && target < 0)) {
    fail(op, "target = " + std::to_string(target) + ", expected " +
                 (targetRequired ? "0 <= target < nChunks = " : "target < nChunks = ") +
                 std::to_string(nChunks));
  }
}

void checkAligned(const char* op, const char* name, const void* p, size_t alignment) {
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0) {
    fail(op, std::string(name) + " is not " + std::to_string(alignment) + "-byte aligned");
  }
}

void checkElementArgs(const char* op, DType dtype, size_t n) {
  checkDType(op, dtype);
  if (n > SIZE_MAX / 4) fail(op, "n = " + std::to_string(n) + " elements do not fit in memory");
}

}  // namespace bagua::kernels
