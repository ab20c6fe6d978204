// A tensor registered with the runtime: where it lives and what it holds.
// The runtime never owns tensor memory; the caller keeps `data` valid.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/comm/types.h"

namespace bagua {

struct TensorSpec {
  std::string name;  // for messages only ("layer3.weight.grad")
  void* data = nullptr;
  size_t numel = 0;
  DType dtype = DType::kFloat32;
  Device device = Device::kCpu;
};

}  // namespace bagua
