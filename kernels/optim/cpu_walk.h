// The CPU side's element walker: loads each slot of a tensor as fp32,
// calls the optimizer's element function and stores the slots back
// (float16/bfloat16 rounded to nearest even, kernels/float_bits.h), with the
// AMP unscale of optim_types.h. Included by the *_cpu.cc files only.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "kernels/float_bits.h"
#include "kernels/optim/optim_types.h"

namespace bagua::kernels::optim::cpu {

struct F32 {
  using Bits = float;
  static float load(Bits b) { return b; }
  static Bits store(float f) { return f; }
};
struct F16 {
  using Bits = uint16_t;
  static float load(Bits b) { return halfToFloat(b); }
  static Bits store(float f) { return floatToHalf(f); }
};
struct BF16 {
  using Bits = uint16_t;
  static float load(Bits b) { return bf16ToFloat(b); }
  static Bits store(float f) { return floatToBf16(f); }
};

// Calls fn(P{}, S{}) with the traits of the parameter and state dtypes
// (checkList has accepted them).
template <typename Fn>
void dispatch(ListTypes types, Fn&& fn) {
  auto withState = [&](auto p) {
    using P = decltype(p);
    if (types.state == DType::kFloat32) {
      fn(p, F32{});
    } else {
      fn(p, P{});
    }
  };
  switch (types.param) {
    case DType::kFloat32:
      return withState(F32{});
    case DType::kFloat16:
      return withState(F16{});
    case DType::kBFloat16:
      return withState(BF16{});
    default:
      throw std::invalid_argument("optim: unsupported parameter dtype");
  }
}

// True when the step is skipped (AMP found an inf or NaN).
inline bool skipped(const AmpArgs& amp) { return amp.foundInf != nullptr && *amp.foundInf != 0.0f; }

// For each element i of t: p (from the master weights where present), g
// (unscaled where amp.gradScale is set, and written back so), s[0..2] (the
// state slots in use; others 0) -> fn(i, p, g, s) -> p, s stored back.
template <typename P, typename S, typename Fn>
void walkTensor(const TensorRef& t, const AmpArgs& amp, Fn&& fn) {
  auto* param = static_cast<typename P::Bits*>(t.ptr[kParam]);
  auto* grad = static_cast<typename P::Bits*>(t.ptr[kGrad]);
  auto* master = static_cast<float*>(t.ptr[kMaster]);
  typename S::Bits* state[3];
  for (int k = 0; k < 3; ++k) state[k] = static_cast<typename S::Bits*>(t.ptr[kState0 + k]);
  const float* scale = amp.gradScale;
  for (size_t i = 0; i < t.numel; ++i) {
    float p = master != nullptr ? master[i] : P::load(param[i]);
    float g = P::load(grad[i]);
    if (scale != nullptr) {
      g = g / *scale;
      grad[i] = P::store(g);
    }
    float s[3];
    for (int k = 0; k < 3; ++k) s[k] = state[k] != nullptr ? S::load(state[k][i]) : 0.0f;
    fn(i, p, g, s);
    if (master != nullptr) master[i] = p;
    param[i] = P::store(p);
    for (int k = 0; k < 3; ++k) {
      if (state[k] != nullptr) state[k][i] = S::store(s[k]);
    }
  }
}

}  // namespace bagua::kernels::optim::cpu
