// What a test reads back of ByteGrad's error-feedback residuals through a
// Reducer's bucket plan: each tensor's slice, as bytes (float32 tensors).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/algorithms/bytegrad.h"
#include "runtime/reducer/reducer.h"

namespace bagua::testing {

// Per tensor t (numel[t] float32 elements), its slice of `algorithm`'s residuals.
inline std::vector<std::vector<uint8_t>> residualByTensor(const Reducer& reducer,
                                                          ByteGrad& algorithm,
                                                          const std::vector<size_t>& numel) {
  std::vector<std::vector<uint8_t>> out(numel.size());
  for (size_t b = 0; b < reducer.buckets().size(); ++b) {
    const auto* base = static_cast<const uint8_t*>(algorithm.residual(b)->data());
    for (const BucketSlot& slot : reducer.buckets()[b].slots) {
      const uint8_t* from = base + slot.offset * sizeof(float);
      out[slot.tensor].assign(from, from + numel[slot.tensor] * sizeof(float));
    }
  }
  return out;
}

}  // namespace bagua::testing
