// Inputs shared by the CPU and GPU kernel tests: deterministic chunked
// buffers of every dtype with patterns chosen to hit the corners of
// MinMaxUInt8 (specials, constant chunks, tiny and huge ranges, odd sizes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/dtype.h"

namespace bagua::kernels::testing {

enum class Pattern {
  kUniform,        // uniform in [-1, 1)
  kOffset,         // 1000 + uniform [0, 1): large values, small range
  kWideMagnitude,  // random sign, exponents 2^-20 .. 2^14 (finite in fp16)
  kTinyRange,      // a few ulps around 0.3 (range far below eps) or around 1e6
  kConstant,       // each chunk constant: 0, 0.3, -7.5, 1, 1e30 (Inf in fp16), ...
  kSpecials,       // chunk c: NaN, +Inf, -Inf, -NaN or nothing, by c % 5
  kMixedZeros,     // -0.0 and +0.0 only, and a chunk with one 1.0
  kIntegers,       // small integers, already on a grid
};

const char* patternName(Pattern p);

struct KernelCase {
  std::string name;
  DType dtype;
  size_t chunkElems;
  int nChunks;
  std::vector<uint8_t> bytes;  // nChunks * chunkElems elements of dtype

  size_t elems() const { return chunkElems * static_cast<size_t>(nChunks); }
  const void* data() const { return bytes.data(); }
};

// Deterministic (seeded) case of nChunks chunks of chunkElems elements.
KernelCase makeCase(DType dtype, size_t chunkElems, int nChunks, Pattern pattern, uint64_t seed);

// The sweep used by the CPU reference test and the GPU bit-for-bit test:
// every dtype x chunk sizes around 32-byte boundaries x 1..8 chunks x pattern.
std::vector<KernelCase> standardCases();

// Element i of a buffer of dtype, widened to float.
float elementAt(DType dtype, const void* data, size_t i);

// Writes `value`, rounded to dtype, as element i.
void setElement(DType dtype, void* data, size_t i, float value);

// Bits of element i (fp16/bf16 zero-extended).
uint32_t bitsAt(DType dtype, const void* data, size_t i);

// Deterministic 64-bit generator (splitmix64).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, 1) with 24 random bits.
  float uniform();
  // Uniform in [0, n).
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t state_;
};

}  // namespace bagua::kernels::testing
