// Tensor lists for the fused-optimizer tests (CPU reference and CUDA): host
// buffers of every slot, filled with seeded random values, and the
// TensorRefs that point into them.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/optim/optim_types.h"

namespace bagua::kernels::testing {

struct OptimCase {
  optim::ListTypes types;
  std::vector<size_t> numel;
  // bytes[slot][tensor]; empty where the slot is unused.
  std::vector<std::vector<std::vector<uint8_t>>> bytes;

  // TensorRefs into `bytes` (host memory).
  std::vector<optim::TensorRef> refs();
  // Element i of tensor t in `slot`, widened to float.
  float at(int slot, size_t t, size_t i) const;
  // Writes v (rounded to the slot's dtype) to element i of tensor t in `slot`.
  void set(int slot, size_t t, size_t i, float v);
  // New random gradients (uniform in [-1, 1)) for the next step.
  void newGrads(uint64_t seed);
};

// Sizes covering single elements, odd lengths and several chunks.
std::vector<size_t> mixedSizes();

// A case of `slots` (bit mask of optim::Slot; param and grad always) over
// tensors of `numel` elements: parameters uniform in [-1, 1), states
// uniform in [0, 1) (second moments must be >= 0), master = the parameter.
OptimCase makeOptimCase(optim::ListTypes types, const std::vector<size_t>& numel, unsigned slots,
                        uint64_t seed);

}  // namespace bagua::kernels::testing
