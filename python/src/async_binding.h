// Binding of the asynchronous model average (async_binding.cc).
#pragma once

#include <nanobind/nanobind.h>

#include "python/src/process_group.h"

namespace bagua::python {

void bindAsync(nanobind::module_& m);

}  // namespace bagua::python
