// The fused optimizers on the CPU: the reference of the CUDA kernels
// (optim_cuda.h; the same bits for SGD, Adam and Adagrad, see optim_math.h)
// and the CPU training path. Each call updates every tensor of the list in
// place, element by element in fp32 (16-bit values are converted on load and
// rounded to nearest even on store). Slots, dtypes and formulas:
// optim_types.h. Bad lists throw std::invalid_argument (checkList).
#pragma once

#include <vector>

#include "kernels/optim/optim_types.h"

namespace bagua::kernels::optim {

void sgdStepCpu(const std::vector<TensorRef>& tensors, ListTypes types, const SgdArgs& args,
                const AmpArgs& amp = {});

void adamStepCpu(const std::vector<TensorRef>& tensors, ListTypes types, const AdamArgs& args,
                 const AmpArgs& amp = {});

void adagradStepCpu(const std::vector<TensorRef>& tensors, ListTypes types, const AdagradArgs& args,
                    const AmpArgs& amp = {});

// LAMB: per tensor, the squared norms of the parameter and of the update are
// summed in double (the CUDA kernel sums fp32 partials: equal to a few fp32
// roundings, not bit for bit), then the trust ratio is applied.
void lambStepCpu(const std::vector<TensorRef>& tensors, ListTypes types, const LambArgs& args,
                 const AmpArgs& amp = {});

}  // namespace bagua::kernels::optim
