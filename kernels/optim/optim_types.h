// The fused optimizers' vocabulary, shared by the CPU reference
// (optim_cpu.h) and the CUDA kernels (optim_cuda.h): a tensor list (each
// tensor's element count and the address of each of its slots), the dtypes
// of a list, the hyperparameters of each optimizer and the AMP arguments.
// No framework types: addresses, sizes, plain numbers.
//
// Slots per optimizer (nullptr where unused; a slot is used by every tensor
// of a list or by none):
//   SGD      state0 = momentum buffer (momentum != 0)
//   Adam     state0 = exp_avg, state1 = exp_avg_sq, state2 = max_exp_avg_sq (amsgrad)
//   Adagrad  state0 = sum
//   LAMB     state0 = exp_avg, state1 = exp_avg_sq
// master: an fp32 copy of a 16-bit parameter (master weights): the update is
// made on it in fp32 and the parameter receives it rounded.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/dtype.h"

namespace bagua::kernels::optim {

enum Slot : int { kParam = 0, kGrad = 1, kState0 = 2, kState1 = 3, kState2 = 4, kMaster = 5 };
constexpr int kSlots = 6;

struct TensorRef {
  size_t numel = 0;
  std::array<void*, kSlots> ptr{};  // nullptr: slot unused
};

// Parameters and gradients share `param` (float32, float16 or bfloat16);
// optimizer state is float32 or the parameter's dtype; master weights float32.
struct ListTypes {
  DType param = DType::kFloat32;
  DType state = DType::kFloat32;
};

// torch.optim.SGD. firstStep: the momentum buffer is uninitialised and
// receives the (decayed) gradient itself, as torch's clone does.
struct SgdArgs {
  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weightDecay = 0.0;
  bool nesterov = false;
  bool maximize = false;
  bool firstStep = false;
};

// torch.optim.Adam / AdamW (decoupled weight decay). step: the step count
// after this step's increment (1 on the first step).
struct AdamArgs {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0;
  double step = 1.0;
  bool decoupled = false;  // AdamW
  bool amsgrad = false;
  bool maximize = false;
};

// torch.optim.Adagrad (state0 starts at initial_accumulator_value). step:
// after this step's increment.
struct AdagradArgs {
  double lr = 1e-2;
  double lrDecay = 0.0;
  double weightDecay = 0.0;
  double eps = 1e-10;
  double step = 1.0;
  bool maximize = false;
};

// LAMB (You et al., arXiv 1904.00962, as NVIDIA's and bagua's LAMB):
//   m = b1 m + (1-b1) g,  v = b2 v + (1-b2) g^2
//   u = (m / bc1) / (sqrt(v / bc2) + eps) + wd p      (bc = 1 with biasCorrection off)
//   r = ||p|| / ||u|| per tensor (1 when either norm is 0), capped at maxTrust if > 0
//   p = p - lr r u
struct LambArgs {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-6;
  double weightDecay = 0.0;
  double step = 1.0;
  double maxTrust = 0.0;  // 0: no cap
  bool biasCorrection = true;
};

// Automatic mixed precision (torch.amp.GradScaler): where foundInf is given
// and *foundInf != 0 nothing is written (the step is skipped for every
// tensor); where gradScale is given, gradients are divided by *gradScale
// before use and written back unscaled (as GradScaler.unscale_ leaves them).
// Device pointers for the CUDA kernels, host pointers for the CPU ones.
struct AmpArgs {
  const float* foundInf = nullptr;
  const float* gradScale = nullptr;
};

// Checks a list before use and returns its slot mask (bit s: slot s set):
// at least one tensor, 1 <= numel of each, param and grad set for every
// tensor, each other slot set for all tensors or for none, the param dtype a
// float type, the state float32 or the param dtype, master weights only for
// 16-bit parameters. Throws std::invalid_argument naming the operation, the
// tensor index and the slot.
unsigned checkList(const char* op, const std::vector<TensorRef>& tensors, ListTypes types);

// Bit of slot s in a slot mask.
constexpr unsigned slotBit(Slot s) { return 1u << static_cast<unsigned>(s); }

// The state slots an optimizer needs and those it takes none of.
struct SlotRule {
  unsigned required = 0;
  unsigned forbidden = 0;
};
SlotRule sgdRule(const SgdArgs& a);
SlotRule adamRule(const AdamArgs& a);
SlotRule adagradRule();
SlotRule lambRule();

// Throws std::invalid_argument unless `mask` (checkList's) fits `rule`.
void checkSlots(const char* op, unsigned mask, SlotRule rule);

}  // namespace bagua::kernels::optim
