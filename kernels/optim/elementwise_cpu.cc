// SGD, Adam/AdamW and Adagrad on the CPU (optim_cpu.h): the element
// functions of optim_math.h over every tensor of the list.
#include "kernels/optim/cpu_walk.h"
#include "kernels/optim/optim_cpu.h"
#include "kernels/optim/optim_math.h"

namespace bagua::kernels::optim {

void sgdStepCpu(const std::vector<TensorRef>& tensors, ListTypes types, const SgdArgs& args,
                const AmpArgs& amp) {
  checkSlots("sgd", checkList("sgd", tensors, types), sgdRule(args));
  if (cpu::skipped(amp)) return;
  const SgdScalars s = sgdScalars(args);
  cpu::dispatch(types, [&](auto p, auto st) {
    for (const TensorRef& t : tensors) {
      cpu::walkTensor<decltype(p), decltype(st)>(
          t, amp,
          [&](size_t, float& w, float g, float(&state)[3]) { sgdElement(w, g, state[0], s); });
    }
  });
}

void adamStepCpu(const std::vector<TensorRef>& tensors, ListTypes types, const AdamArgs& args,
                 const AmpArgs& amp) {
  checkSlots("adam", checkList("adam", tensors, types), adamRule(args));
  if (cpu::skipped(amp)) return;
  const AdamScalars s = adamScalars(args);
  cpu::dispatch(types, [&](auto p, auto st) {
    for (const TensorRef& t : tensors) {
      cpu::walkTensor<decltype(p), decltype(st)>(
          t, amp, [&](size_t, float& w, float g, float(&state)[3]) {
            adamElement(w, g, state[0], state[1], state[2], s);
          });
    }
  });
}

void adagradStepCpu(const std::vector<TensorRef>& tensors, ListTypes types, const AdagradArgs& args,
                    const AmpArgs& amp) {
  checkSlots("adagrad", checkList("adagrad", tensors, types), adagradRule());
  if (cpu::skipped(amp)) return;
  const AdagradScalars s = adagradScalars(args);
  cpu::dispatch(types, [&](auto p, auto st) {
    for (const TensorRef& t : tensors) {
      cpu::walkTensor<decltype(p), decltype(st)>(
          t, amp,
          [&](size_t, float& w, float g, float(&state)[3]) { adagradElement(w, g, state[0], s); });
    }
  });
}

}  // namespace bagua::kernels::optim
