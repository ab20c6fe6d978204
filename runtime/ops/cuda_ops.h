// DeviceOps for CUDA buffers: the kernels of kernels/ launched on the NCCL
// communicator's stream, so compute and collectives run in enqueue order
// without the host waiting.
#pragma once

#include <cstdint>

#include "runtime/comm/nccl_communicator.h"
#include "runtime/ops/device_ops.h"

namespace bagua {

class CudaOps final : public DeviceOps {
 public:
  explicit CudaOps(NcclCommunicator& comm) : comm_(comm) {}

  Device device() const override { return Device::kCuda; }
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
  std::shared_ptr<Work> fence(std::string what) override { return comm_.fence(std::move(what)); }

 private:
  NcclCommunicator& comm_;
};

}  // namespace bagua
