// Binding of local SGD and DiLoCo (local_updates_binding.cc).
#pragma once

#include <nanobind/nanobind.h>

namespace bagua::python {

void bindLocalUpdates(nanobind::module_& m);

}  // namespace bagua::python
