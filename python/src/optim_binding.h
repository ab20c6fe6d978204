// Binding of the fused optimizers (kernels/optim/): bagua._C.OptimList, a
// tensor list on the CPU or on a CUDA device with one step method per
// optimizer. The fused optimizer's per-step check is flat_watch.h.
#pragma once

#include <nanobind/nanobind.h>

namespace bagua::python {

void bindOptim(nanobind::module_& m);

}  // namespace bagua::python
