// DeviceOps for CPU buffers: each step runs on the CPU communicator's worker
// thread (Gloo's or torch's), in order with its collectives, using the
// kernels' CPU reference.
#pragma once

#include <cstdint>

#include "runtime/comm/cpu_communicator.h"
#include "runtime/ops/device_ops.h"

namespace bagua {

class CpuOps final : public DeviceOps {
 public:
  explicit CpuOps(CpuCommunicator& comm) : comm_(comm) {}

  Device device() const override { return Device::kCpu; }
  std::unique_ptr<DeviceBuffer> allocate(size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* dst, size_t bytes) override;
  void compress(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                uint8_t* dst) override;
  void decompress(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks,
                  void* dst) override;
  void compress4(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                 uint8_t* dst) override;
  void decompress4(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks,
                   void* dst) override;
  void reduceChunks(DType dtype, void* data, size_t chunkElems, int nChunks, int target,
                    bool average) override;
  void addScaled(DType dtype, void* out, const void* a, const void* b, size_t n,
                 float alpha) override;
  void residual(DType dtype, void* out, const void* a, const void* b, size_t n) override;
  std::shared_ptr<Work> fence(std::string what) override;

 private:
  CpuCommunicator& comm_;
};

}  // namespace bagua
