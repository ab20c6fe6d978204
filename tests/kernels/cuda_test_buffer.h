// Device memory and comparison helpers of the CUDA kernel tests (suite
// 'gpu'): a buffer at a chosen misalignment, upload/download, and the first
// byte where a GPU result differs from the CPU reference.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

namespace bagua::kernels::testing {

// Device memory of `bytes` bytes starting `offset` bytes into an allocation.
class DeviceBuffer {
 public:
  DeviceBuffer(size_t bytes, size_t offset) : bytes_(bytes) {
    if (cudaMalloc(&base_, bytes + offset + 16) != cudaSuccess)
      throw std::runtime_error("cudaMalloc");
    data_ = static_cast<uint8_t*>(base_) + offset;
  }
  ~DeviceBuffer() { cudaFree(base_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  uint8_t* get() { return data_; }
  void upload(const std::vector<uint8_t>& host) {
    if (cudaMemcpy(data_, host.data(), bytes_, cudaMemcpyHostToDevice) != cudaSuccess) {
      throw std::runtime_error("upload");
    }
  }
  std::vector<uint8_t> download() {
    std::vector<uint8_t> host(bytes_);
    if (cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost) != cudaSuccess) {
      throw std::runtime_error("download");
    }
    return host;
  }

 private:
  void* base_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t bytes_;
};

// "" when equal, else where and how they first differ.
inline std::string difference(const std::vector<uint8_t>& gpu, const std::vector<uint8_t>& cpu) {
  if (gpu.size() != cpu.size()) return "sizes differ";
  for (size_t i = 0; i < gpu.size(); ++i) {
    if (gpu[i] != cpu[i]) {
      return "byte " + std::to_string(i) + ": gpu " + std::to_string(gpu[i]) + " cpu " +
             std::to_string(cpu[i]);
    }
  }
  return "";
}

// Whether a GPU is usable (tests skip otherwise).
inline bool haveGpu() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

}  // namespace bagua::kernels::testing
