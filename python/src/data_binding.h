// Binding of the cached dataset's stores (runtime/data/): MemoryCache,
// SharedCounters, RedisShards, GuardedProcess. Values cross as bytes in, and
// out as writable buffers that torch.frombuffer views without a copy: a
// bytearray (memory cache: copied out of the shared segment, which others
// may overwrite) or a NumPy array over the Redis reply itself.
#pragma once

#include <nanobind/nanobind.h>

namespace bagua::python {

void bindData(nanobind::module_& m);

}  // namespace bagua::python
