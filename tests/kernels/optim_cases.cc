// Tensor lists for the fused-optimizer tests (optim_cases.h).
#include "tests/kernels/optim_cases.h"

#include <cstring>

#include "kernels/float_bits.h"
#include "tests/kernels/kernel_cases.h"

namespace bagua::kernels::testing {
namespace {

using optim::kMaster;
using optim::kSlots;

DType slotType(const optim::ListTypes& types, int slot) {
  if (slot == kMaster) return DType::kFloat32;
  if (slot >= optim::kState0) return types.state;
  return types.param;
}

void store(DType dtype, uint8_t* base, size_t i, float v) {
  if (dtype == DType::kFloat32) {
    std::memcpy(base + 4 * i, &v, 4);
    return;
  }
  const uint16_t h = dtype == DType::kFloat16 ? floatToHalf(v) : floatToBf16(v);
  std::memcpy(base + 2 * i, &h, 2);
}

}  // namespace

std::vector<optim::TensorRef> OptimCase::refs() {
  std::vector<optim::TensorRef> out(numel.size());
  for (size_t t = 0; t < numel.size(); ++t) {
    out[t].numel = numel[t];
    for (int s = 0; s < kSlots; ++s) {
      if (!bytes[s].empty()) out[t].ptr[s] = bytes[s][t].data();
    }
  }
  return out;
}

float OptimCase::at(int slot, size_t t, size_t i) const {
  return elementAt(slotType(types, slot), bytes[slot][t].data(), i);
}

void OptimCase::set(int slot, size_t t, size_t i, float v) {
  store(slotType(types, slot), bytes[slot][t].data(), i, v);
}

void OptimCase::newGrads(uint64_t seed) {
  Rng rng(seed);
  for (size_t t = 0; t < numel.size(); ++t) {
    for (size_t i = 0; i < numel[t]; ++i) set(optim::kGrad, t, i, 2.0f * rng.uniform() - 1.0f);
  }
}

std::vector<size_t> mixedSizes() { return {1, 3, 64, 1000, 4097, 8192, 8193, 20000}; }

OptimCase makeOptimCase(optim::ListTypes types, const std::vector<size_t>& numel, unsigned slots,
                        uint64_t seed) {
  OptimCase c;
  c.types = types;
  c.numel = numel;
  c.bytes.resize(kSlots);
  slots |= optim::slotBit(optim::kParam) | optim::slotBit(optim::kGrad);
  Rng rng(seed);
  for (int s = 0; s < kSlots; ++s) {
    if ((slots & (1u << s)) == 0) continue;
    const size_t width = dtypeSize(slotType(types, s));
    c.bytes[s].resize(numel.size());
    for (size_t t = 0; t < numel.size(); ++t) {
      c.bytes[s][t].assign(numel[t] * width, 0);
      for (size_t i = 0; i < numel[t]; ++i) {
        const float u = rng.uniform();
        c.set(s, t, i, s >= optim::kState0 && s != kMaster ? u : 2.0f * u - 1.0f);
      }
    }
  }
  if ((slots & optim::slotBit(kMaster)) != 0) {
    for (size_t t = 0; t < numel.size(); ++t) {
      for (size_t i = 0; i < numel[t]; ++i) c.set(kMaster, t, i, c.at(optim::kParam, t, i));
    }
  }
  return c;
}

}  // namespace bagua::kernels::testing
