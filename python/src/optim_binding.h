// Binding of the fused optimizers (kernels/optim/): bagua._C.OptimList, a
// tensor list on the CPU or on a CUDA device with one step method per
// optimizer, and grad_mismatches, the fused optimizer's per-step check.
#pragma once

#include <nanobind/nanobind.h>

namespace bagua::python {

void bindOptim(nanobind::module_& m);

}  // namespace bagua::python
