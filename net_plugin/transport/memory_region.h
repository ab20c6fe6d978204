// What regMr returns as the mhandle: the registered range. NCCL passes it
// back with every isend/irecv on that buffer; the data path checks the
// buffer lies inside it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bagua::net {

struct MemoryRegion {
  const uint8_t* base = nullptr;
  size_t size = 0;

  bool covers(const void* data, size_t len) const {
    const auto* p = static_cast<const uint8_t*>(data);
    return p >= base && len <= size && static_cast<size_t>(p - base) <= size - len;
  }
};

}  // namespace bagua::net
