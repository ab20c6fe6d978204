// The per-element arithmetic of the fused optimizers, written once for the
// CPU reference (g++) and the CUDA kernels (nvcc), so both give the same
// bits: every operation is one IEEE fp32 operation rounded to nearest even,
// in the order of torch.optim's single-tensor implementations (torch 2.11,
// torch/optim/{sgd,adam,adagrad}.py), with the scalars torch computes in
// Python doubles computed here in double on the host and rounded to float
// (as ATen rounds a Python scalar for a float tensor).
//
// Relies on: no contraction of a*b+c into an FMA (the CPU library is built
// with -ffp-contract=off, the CUDA files with --fmad=false) and IEEE sqrt and
// division (nvcc's defaults without --use_fast_math). torch's own kernels
// may contract (ATen's vectorized add with alpha is an fmadd), so results
// agree with torch to about one fp32 rounding per operation, not bit for bit.
#pragma once

#include <cmath>

#include "kernels/minmax_uint8_math.h"  // BAGUA_HD
#include "kernels/optim/optim_types.h"

namespace bagua::kernels::optim {

// ---- scalars, from the arguments (host) ---------------------------------

struct SgdScalars {
  float negLr, momentum, oneMinusDampening, weightDecay;
  bool hasMomentum, nesterov, maximize, firstStep;
};

inline SgdScalars sgdScalars(const SgdArgs& a) {
  return SgdScalars{static_cast<float>(-a.lr),
                    static_cast<float>(a.momentum),
                    static_cast<float>(1.0 - a.dampening),
                    static_cast<float>(a.weightDecay),
                    a.momentum != 0.0,
                    a.nesterov,
                    a.maximize,
                    a.firstStep};
}

struct AdamScalars {
  float negStepSize;    // -lr / (1 - beta1^step)
  float bc2Sqrt;        // (1 - beta2^step) ** 0.5
  float oneMinusBeta1;  // lerp weight
  float beta2, oneMinusBeta2, eps, weightDecay;
  float decay;  // 1 - lr * weight_decay (AdamW)
  bool decoupled, amsgrad, maximize;
};

inline AdamScalars adamScalars(const AdamArgs& a) {
  const double bc1 = 1.0 - std::pow(a.beta1, a.step);
  const double bc2 = 1.0 - std::pow(a.beta2, a.step);
  return AdamScalars{static_cast<float>(-(a.lr / bc1)),
                     static_cast<float>(std::pow(bc2, 0.5)),
                     static_cast<float>(1.0 - a.beta1),
                     static_cast<float>(a.beta2),
                     static_cast<float>(1.0 - a.beta2),
                     static_cast<float>(a.eps),
                     static_cast<float>(a.weightDecay),
                     static_cast<float>(1.0 - a.lr * a.weightDecay),
                     a.decoupled,
                     a.amsgrad,
                     a.maximize};
}

struct AdagradScalars {
  float negClr, weightDecay, eps;
  bool maximize;
};

inline AdagradScalars adagradScalars(const AdagradArgs& a) {
  const double clr = a.lr / (1.0 + (a.step - 1.0) * a.lrDecay);
  return AdagradScalars{static_cast<float>(-clr), static_cast<float>(a.weightDecay),
                        static_cast<float>(a.eps), a.maximize};
}

struct LambScalars {
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2;
  float invBc1, invBc2;  // 1 / bias corrections (1 without bias correction)
  float eps, weightDecay, negLr, maxTrust;
};

inline LambScalars lambScalars(const LambArgs& a) {
  const double bc1 = a.biasCorrection ? 1.0 - std::pow(a.beta1, a.step) : 1.0;
  const double bc2 = a.biasCorrection ? 1.0 - std::pow(a.beta2, a.step) : 1.0;
  return LambScalars{static_cast<float>(a.beta1),   static_cast<float>(1.0 - a.beta1),
                     static_cast<float>(a.beta2),   static_cast<float>(1.0 - a.beta2),
                     static_cast<float>(1.0 / bc1), static_cast<float>(1.0 / bc2),
                     static_cast<float>(a.eps),     static_cast<float>(a.weightDecay),
                     static_cast<float>(-a.lr),     static_cast<float>(a.maxTrust)};
}

// ---- per element -------------------------------------------------------------

// torch's lerp (ATen lerp: start + w (end - start) for |w| < 0.5, else
// end - (end - start)(1 - w)).
BAGUA_HD float lerp(float start, float end, float w) {
  return std::fabs(w) < 0.5f ? start + w * (end - start) : end - (end - start) * (1.0f - w);
}

// SGD. buf is read and written only with momentum.
BAGUA_HD void sgdElement(float& p, float g, float& buf, const SgdScalars& s) {
  if (s.maximize) g = -g;
  if (s.weightDecay != 0.0f) g = g + s.weightDecay * p;
  if (s.hasMomentum) {
    buf = s.firstStep ? g : buf * s.momentum + s.oneMinusDampening * g;
    g = s.nesterov ? g + s.momentum * buf : buf;
  }
  p = p + s.negLr * g;
}

// Adam / AdamW. vmax is read and written only with amsgrad.
BAGUA_HD void adamElement(float& p, float g, float& m, float& v, float& vmax,
                          const AdamScalars& s) {
  if (s.maximize) g = -g;
  if (s.weightDecay != 0.0f) {
    if (s.decoupled) {
      p = p * s.decay;
    } else {
      g = g + s.weightDecay * p;
    }
  }
  m = lerp(m, g, s.oneMinusBeta1);
  v = v * s.beta2 + s.oneMinusBeta2 * g * g;
  float second = v;
  if (s.amsgrad) {
    vmax = vmax > v || vmax != vmax ? vmax : v;  // torch.maximum (NaN propagates)
    second = vmax;
  }
  const float denom = std::sqrt(second) / s.bc2Sqrt + s.eps;
  p = p + s.negStepSize * (m / denom);
}

// Adagrad.
BAGUA_HD void adagradElement(float& p, float g, float& sum, const AdagradScalars& s) {
  if (s.maximize) g = -g;
  if (s.weightDecay != 0.0f) g = g + s.weightDecay * p;
  sum = sum + 1.0f * g * g;
  const float stdev = std::sqrt(sum) + s.eps;
  p = p + s.negClr * (g / stdev);
}

// LAMB, first pass: the moments, and the update u (before the trust ratio).
BAGUA_HD float lambUpdate(float p, float g, float& m, float& v, const LambScalars& s) {
  m = m * s.beta1 + s.oneMinusBeta1 * g;
  v = v * s.beta2 + s.oneMinusBeta2 * g * g;
  const float mHat = m * s.invBc1;
  const float vHat = v * s.invBc2;
  return mHat / (std::sqrt(vHat) + s.eps) + s.weightDecay * p;
}

// LAMB, second pass: u recomputed from the stored moments (the same bits as
// in the first pass), applied with the tensor's trust ratio.
BAGUA_HD float lambRecompute(float p, float m, float v, const LambScalars& s) {
  const float mHat = m * s.invBc1;
  const float vHat = v * s.invBc2;
  return mHat / (std::sqrt(vHat) + s.eps) + s.weightDecay * p;
}

// The trust ratio from the squared norms of the parameter and the update.
BAGUA_HD float lambTrust(float paramSq, float updateSq, float maxTrust) {
  const float pn = std::sqrt(paramSq);
  const float un = std::sqrt(updateSq);
  float r = pn > 0.0f && un > 0.0f ? pn / un : 1.0f;
  if (maxTrust > 0.0f && r > maxTrust) r = maxTrust;
  return r;
}

}  // namespace bagua::kernels::optim
