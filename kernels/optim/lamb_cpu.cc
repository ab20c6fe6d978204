// LAMB on the CPU (optim_cpu.h): per tensor, a first pass updates the
// moments and sums the squared norms of the parameter and of the update (in
// double), a second pass recomputes the update from the stored moments and
// applies it with the tensor's trust ratio (optim_math.h).
#include "kernels/optim/cpu_walk.h"
#include "kernels/optim/optim_cpu.h"
#include "kernels/optim/optim_math.h"

namespace bagua::kernels::optim {
namespace {

template <typename P, typename S>
void lambTensor(const TensorRef& t, const AmpArgs& amp, const LambScalars& s) {
  double paramSq = 0.0;
  double updateSq = 0.0;
  cpu::walkTensor<P, S>(t, amp, [&](size_t, float& w, float g, float(&state)[3]) {
    const float u = lambUpdate(w, g, state[0], state[1], s);
    paramSq += static_cast<double>(w) * w;
    updateSq += static_cast<double>(u) * u;
  });
  const float trust =
      lambTrust(static_cast<float>(paramSq), static_cast<float>(updateSq), s.maxTrust);
  const float negRate = s.negLr * trust;
  auto* param = static_cast<typename P::Bits*>(t.ptr[kParam]);
  auto* master = static_cast<float*>(t.ptr[kMaster]);
  const auto* m = static_cast<const typename S::Bits*>(t.ptr[kState0]);
  const auto* v = static_cast<const typename S::Bits*>(t.ptr[kState1]);
  for (size_t i = 0; i < t.numel; ++i) {
    float w = master != nullptr ? master[i] : P::load(param[i]);
    const float u = lambRecompute(w, S::load(m[i]), S::load(v[i]), s);
    w = w + negRate * u;
    if (master != nullptr) master[i] = w;
    param[i] = P::store(w);
  }
}

}  // namespace

void lambStepCpu(const std::vector<TensorRef>& tensors, ListTypes types, const LambArgs& args,
                 const AmpArgs& amp) {
  checkSlots("lamb", checkList("lamb", tensors, types), lambRule());
  if (cpu::skipped(amp)) return;
  const LambScalars s = lambScalars(args);
  cpu::dispatch(types, [&](auto p, auto st) {
    for (const TensorRef& t : tensors) lambTensor<decltype(p), decltype(st)>(t, amp, s);
  });
}

}  // namespace bagua::kernels::optim
