// DeviceScope: makes a CUDA device current for a scope and restores the
// previous one. Kernel launches, events and stream-ordered allocations go to
// the current device, whatever thread calls, so code acting for a
// communicator selects its device first.
#pragma once

#include <cuda_runtime_api.h>

#include "runtime/cuda/cuda_check.h"

namespace bagua {

class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    BAGUA_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) BAGUA_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace bagua
