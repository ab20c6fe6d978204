// Binding of the cached dataset's stores (runtime/data/): MemoryCache,
// SharedCounters, RedisShards, GuardedProcess. Values cross as bytes in and
// bytearray out (writable, so torch.frombuffer views them without a copy).
#pragma once

#include <nanobind/nanobind.h>

namespace bagua::python {

void bindData(nanobind::module_& m);

}  // namespace bagua::python
