// What this build of bagua._C has (for `python -m bagua.info` and the
// Python layer's checks): build_info() and nccl_library().
#pragma once

#include <nanobind/nanobind.h>

namespace bagua::python {

void bindBuildInfo(nanobind::module_& m);

}  // namespace bagua::python
