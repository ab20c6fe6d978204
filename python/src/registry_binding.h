// Binding of the runtime's algorithm registry (runtime/algorithms/registry.h).
#pragma once

#include <nanobind/nanobind.h>

namespace bagua::python {

void bindRegistry(nanobind::module_& m);

}  // namespace bagua::python
