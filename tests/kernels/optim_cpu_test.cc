// The fused optimizers' CPU reference (kernels/optim/optim_cpu.h) against a
// scalar reference written here from torch.optim's formulas: bit for bit
// (the same fp32 operations in torch's order) for SGD, Adam/AdamW and
// Adagrad over mixed tensor sizes, every dtype pair, master weights and
// several steps; LAMB's trust ratio against norms summed here; the AMP skip
// and unscale; argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <vector>

#include "kernels/optim/optim_cpu.h"
#include "tests/kernels/optim_cases.h"

namespace bagua::kernels::optim {
namespace {

using testing::makeOptimCase;
using testing::mixedSizes;
using testing::OptimCase;

const ListTypes kTypes[] = {{DType::kFloat32, DType::kFloat32},
                            {DType::kBFloat16, DType::kFloat32},
                            {DType::kBFloat16, DType::kBFloat16},
                            {DType::kFloat16, DType::kFloat32},
                            {DType::kFloat16, DType::kFloat16}};

// fn(p, g, s0, s1, s2) on every element of `want`, through floats, as a
// plain loop (the reference's own load/store: OptimCase::at / set).
void referenceStep(OptimCase& want, const std::function<void(float&, float, float (&)[3])>& fn) {
  const bool master = !want.bytes[kMaster].empty();
  for (size_t t = 0; t < want.numel.size(); ++t) {
    for (size_t i = 0; i < want.numel[t]; ++i) {
      float p = want.at(master ? kMaster : kParam, t, i);
      float s[3] = {0, 0, 0};
      for (int k = 0; k < 3; ++k) {
        if (!want.bytes[kState0 + k].empty()) s[k] = want.at(kState0 + k, t, i);
      }
      fn(p, want.at(kGrad, t, i), s);
      if (master) want.set(kMaster, t, i, p);
      want.set(kParam, t, i, p);
      for (int k = 0; k < 3; ++k) {
        if (!want.bytes[kState0 + k].empty()) want.set(kState0 + k, t, i, s[k]);
      }
    }
  }
}

void expectSameBytes(const OptimCase& got, const OptimCase& want, const char* what) {
  for (int s = 0; s < kSlots; ++s) {
    ASSERT_EQ(got.bytes[s].size(), want.bytes[s].size());
    for (size_t t = 0; t < got.bytes[s].size(); ++t) {
      ASSERT_EQ(got.bytes[s][t], want.bytes[s][t])
          << what << ": slot " << s << " tensor " << t << " (" << got.numel[t] << " elements)";
    }
  }
}

float sgdRef(float& p, float g, float& buf, const SgdArgs& a) {
  if (a.maximize) g = -g;
  if (a.weightDecay != 0) g = g + static_cast<float>(a.weightDecay) * p;
  if (a.momentum != 0) {
    if (a.firstStep) {
      buf = g;
    } else {
      buf = buf * static_cast<float>(a.momentum) + static_cast<float>(1 - a.dampening) * g;
    }
    g = a.nesterov ? g + static_cast<float>(a.momentum) * buf : buf;
  }
  p = p + static_cast<float>(-a.lr) * g;
  return p;
}

TEST(OptimCpu, SgdMatchesTorchFormulaBitForBit) {
  for (ListTypes types : kTypes) {
    for (double momentum : {0.0, 0.9}) {
      for (int variant = 0; variant < 4; ++variant) {
        SgdArgs a;
        a.lr = 0.05;
        a.momentum = momentum;
        a.dampening = variant == 1 ? 0.1 : 0.0;
        a.nesterov = momentum != 0 && variant == 2;
        a.weightDecay = variant >= 2 ? 0.01 : 0.0;
        a.maximize = variant == 3;
        const unsigned slots = momentum != 0 ? slotBit(kState0) : 0u;
        OptimCase got = makeOptimCase(types, mixedSizes(), slots, 7 + variant);
        OptimCase want = got;
        for (int step = 0; step < 3; ++step) {
          a.firstStep = step == 0;
          got.newGrads(100 + step);
          want.newGrads(100 + step);
          sgdStepCpu(got.refs(), types, a);
          referenceStep(want, [&](float& p, float g, float(&s)[3]) { sgdRef(p, g, s[0], a); });
        }
        expectSameBytes(got, want, "sgd");
      }
    }
  }
}

void adamRef(float& p, float g, float (&s)[3], const AdamArgs& a) {
  if (a.maximize) g = -g;
  if (a.weightDecay != 0) {
    if (a.decoupled) {
      p = p * static_cast<float>(1 - a.lr * a.weightDecay);
    } else {
      g = g + static_cast<float>(a.weightDecay) * p;
    }
  }
  const float w = static_cast<float>(1 - a.beta1);  // 0.1: the first lerp branch
  s[0] = w < 0.5f ? s[0] + w * (g - s[0]) : g - (g - s[0]) * (1.0f - w);
  s[1] = s[1] * static_cast<float>(a.beta2) + static_cast<float>(1 - a.beta2) * g * g;
  float second = s[1];
  if (a.amsgrad) {
    s[2] = std::fmax(s[2], s[1]);
    second = s[2];
  }
  const double bc1 = 1 - std::pow(a.beta1, a.step);
  const double bc2 = 1 - std::pow(a.beta2, a.step);
  const float denom =
      std::sqrt(second) / static_cast<float>(std::pow(bc2, 0.5)) + static_cast<float>(a.eps);
  p = p + static_cast<float>(-(a.lr / bc1)) * (s[0] / denom);
}

TEST(OptimCpu, AdamAndAdamWMatchTorchFormulaBitForBit) {
  for (ListTypes types : kTypes) {
    for (int variant = 0; variant < 5; ++variant) {
      AdamArgs a;
      a.lr = 0.01;
      a.weightDecay = variant >= 1 ? 0.1 : 0.0;
      a.decoupled = variant == 2 || variant == 4;
      a.amsgrad = variant >= 3;
      a.maximize = variant == 4;
      unsigned slots = slotBit(kState0) | slotBit(kState1) | (a.amsgrad ? slotBit(kState2) : 0);
      if (types.param != DType::kFloat32 && variant == 2) slots |= slotBit(kMaster);
      OptimCase got = makeOptimCase(types, mixedSizes(), slots, 11 + variant);
      OptimCase want = got;
      for (int step = 1; step <= 3; ++step) {
        a.step = step;
        got.newGrads(200 + step);
        want.newGrads(200 + step);
        adamStepCpu(got.refs(), types, a);
        referenceStep(want, [&](float& p, float g, float(&s)[3]) { adamRef(p, g, s, a); });
      }
      expectSameBytes(got, want, "adam");
    }
  }
}

TEST(OptimCpu, AdagradMatchesTorchFormulaBitForBit) {
  for (ListTypes types : kTypes) {
    for (int variant = 0; variant < 3; ++variant) {
      AdagradArgs a;
      a.lr = 0.1;
      a.lrDecay = variant == 1 ? 0.01 : 0.0;
      a.weightDecay = variant == 2 ? 0.05 : 0.0;
      OptimCase got = makeOptimCase(types, mixedSizes(), slotBit(kState0), 31 + variant);
      OptimCase want = got;
      for (int step = 1; step <= 3; ++step) {
        a.step = step;
        got.newGrads(300 + step);
        want.newGrads(300 + step);
        adagradStepCpu(got.refs(), types, a);
        const float clr = static_cast<float>(-(a.lr / (1 + (step - 1) * a.lrDecay)));
        referenceStep(want, [&](float& p, float g, float(&s)[3]) {
          if (a.weightDecay != 0) g = g + static_cast<float>(a.weightDecay) * p;
          s[0] = s[0] + g * g;
          p = p + clr * (g / (std::sqrt(s[0]) + static_cast<float>(a.eps)));
        });
      }
      expectSameBytes(got, want, "adagrad");
    }
  }
}

// LAMB per tensor: moments, the update, norms summed in double here, the
// trust ratio, then p - lr r u. Same fp32 operations as the kernel.
TEST(OptimCpu, LambAppliesEachTensorsOwnTrustRatio) {
  for (ListTypes types : kTypes) {
    for (double maxTrust : {0.0, 0.5}) {
      LambArgs a;
      a.lr = 0.01;
      a.weightDecay = 0.01;
      a.maxTrust = maxTrust;
      OptimCase got = makeOptimCase(types, mixedSizes(), slotBit(kState0) | slotBit(kState1), 41);
      // Tensors of very different scales: each tensor's own ratio matters.
      for (size_t t = 0; t < got.numel.size(); ++t) {
        for (size_t i = 0; i < got.numel[t]; ++i) {
          got.set(kParam, t, i, got.at(kParam, t, i) * static_cast<float>(1 << (t % 6)));
        }
      }
      OptimCase want = got;
      a.step = 1;
      lambStepCpu(got.refs(), types, a);
      const float b1 = 0.9f, b2 = 0.999f;
      const float ib1 = static_cast<float>(1 / (1 - std::pow(0.9, 1.0)));
      const float ib2 = static_cast<float>(1 / (1 - std::pow(0.999, 1.0)));
      for (size_t t = 0; t < want.numel.size(); ++t) {
        double ps = 0, us = 0;
        std::vector<float> p(want.numel[t]), m(p.size()), v(p.size());
        for (size_t i = 0; i < p.size(); ++i) {
          const float g = want.at(kGrad, t, i);
          p[i] = want.at(kParam, t, i);
          m[i] = want.at(kState0, t, i) * b1 + static_cast<float>(1 - 0.9) * g;
          v[i] = want.at(kState1, t, i) * b2 + static_cast<float>(1 - 0.999) * g * g;
          want.set(kState0, t, i, m[i]);
          want.set(kState1, t, i, v[i]);
          const float u = m[i] * ib1 / (std::sqrt(v[i] * ib2) + 1e-6f) + 0.01f * p[i];
          ps += static_cast<double>(p[i]) * p[i];
          us += static_cast<double>(u) * u;
        }
        float r = std::sqrt(static_cast<float>(ps)) / std::sqrt(static_cast<float>(us));
        if (maxTrust > 0 && r > maxTrust) r = static_cast<float>(maxTrust);
        for (size_t i = 0; i < p.size(); ++i) {
          // The second pass reads the moments as stored (rounded for 16-bit state).
          const float u =
              want.at(kState0, t, i) * ib1 / (std::sqrt(want.at(kState1, t, i) * ib2) + 1e-6f) +
              0.01f * p[i];
          want.set(kParam, t, i, p[i] + (-0.01f * r) * u);
        }
      }
      expectSameBytes(got, want, "lamb");
    }
  }
}

TEST(OptimCpu, AmpFoundInfSkipsEveryTensor) {
  OptimCase got = makeOptimCase({DType::kFloat32, DType::kFloat32}, mixedSizes(),
                                slotBit(kState0) | slotBit(kState1), 51);
  const OptimCase before = got;
  const float inf = 1.0f;
  AdamArgs a;
  adamStepCpu(got.refs(), got.types, a, AmpArgs{&inf, nullptr});
  LambArgs l;
  lambStepCpu(got.refs(), got.types, l, AmpArgs{&inf, nullptr});
  expectSameBytes(got, before, "skipped step");
}

// With gradScale, gradients are divided by it first and left unscaled: the
// same result as the step on gradients divided beforehand.
TEST(OptimCpu, AmpUnscalesGradientsInTheStep) {
  for (ListTypes types : kTypes) {
    const float scale = 1024.0f;
    const float noInf = 0.0f;
    OptimCase got = makeOptimCase(types, mixedSizes(), slotBit(kState0) | slotBit(kState1), 61);
    OptimCase want = got;
    for (size_t t = 0; t < got.numel.size(); ++t) {
      for (size_t i = 0; i < got.numel[t]; ++i) {
        got.set(kGrad, t, i, want.at(kGrad, t, i) * scale);
      }
    }
    AdamArgs a;
    adamStepCpu(got.refs(), types, a, AmpArgs{&noInf, &scale});
    adamStepCpu(want.refs(), types, a);
    expectSameBytes(got, want, "unscaled adam");
  }
}

TEST(OptimCpu, BadListsAreRefusedWithTheReason) {
  OptimCase c = makeOptimCase({DType::kFloat32, DType::kFloat32}, {4, 5}, slotBit(kState0), 71);
  std::vector<TensorRef> refs = c.refs();
  AdamArgs adam;
  try {
    adamStepCpu(refs, c.types, adam);
    FAIL() << "a list without exp_avg_sq was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("state1"), std::string::npos) << e.what();
  }
  std::vector<TensorRef> mixed = refs;
  mixed[1].ptr[kState0] = nullptr;
  SgdArgs sgd;
  sgd.momentum = 0.9;
  EXPECT_THROW(sgdStepCpu(mixed, c.types, sgd), std::invalid_argument);
  std::vector<TensorRef> empty = refs;
  empty[0].numel = 0;
  EXPECT_THROW(sgdStepCpu(empty, c.types, sgd), std::invalid_argument);
  EXPECT_THROW(sgdStepCpu({}, c.types, sgd), std::invalid_argument);
  EXPECT_THROW(sgdStepCpu(refs, {DType::kInt32, DType::kFloat32}, sgd), std::invalid_argument);
  EXPECT_THROW(sgdStepCpu(refs, {DType::kBFloat16, DType::kFloat16}, sgd), std::invalid_argument);
  std::vector<TensorRef> master = refs;
  for (auto& r : master) r.ptr[kMaster] = r.ptr[kParam];
  EXPECT_THROW(sgdStepCpu(master, c.types, sgd), std::invalid_argument);  // fp32 + master
}

}  // namespace
}  // namespace bagua::kernels::optim
