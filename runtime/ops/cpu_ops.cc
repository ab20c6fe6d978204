// CpuOps: CPU reference kernels run as ordered tasks of the CPU communicator. The
// dtype is checked before a step is enqueued: a kernel's error inside the
// worker would fail every later operation of the communicator.
#include "runtime/ops/cpu_ops.h"

#include <cstring>
#include <vector>

#include "kernels/minmax_uint4.h"
#include "kernels/minmax_uint8.h"

namespace bagua {
namespace {

class HostBuffer final : public DeviceBuffer {
 public:
  explicit HostBuffer(size_t bytes) : storage_(bytes, 0) {}
  void* data() override { return storage_.data(); }
  size_t bytes() const override { return storage_.size(); }

 private:
  std::vector<uint8_t> storage_;
};

}  // namespace

std::unique_ptr<DeviceBuffer> CpuOps::allocate(size_t bytes) {
  return std::make_unique<HostBuffer>(bytes);
}

void CpuOps::copy(void* dst, const void* src, size_t bytes) {
  if (dst == src || bytes == 0) return;
  comm_.enqueue("copy", [dst, src, bytes] { std::memcpy(dst, src, bytes); });
}

void CpuOps::zero(void* dst, size_t bytes) {
  if (bytes == 0) return;
  comm_.enqueue("zero", [dst, bytes] { std::memset(dst, 0, bytes); });
}

void CpuOps::compress(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                      uint8_t* dst) {
  requireAlgorithmDType("compress", dtype);
  comm_.enqueue("compress",
                [=] { kernels::compressCpu(dtype, src, chunkElems, nChunks, target, dst); });
}

void CpuOps::decompress(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks,
                        void* dst) {
  requireAlgorithmDType("decompress", dtype);
  comm_.enqueue("decompress",
                [=] { kernels::decompressCpu(dtype, src, chunkElems, nChunks, dst); });
}

void CpuOps::compress4(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                       uint8_t* dst) {
  requireAlgorithmDType("compress4", dtype);
  comm_.enqueue("compress4",
                [=] { kernels::compress4Cpu(dtype, src, chunkElems, nChunks, target, dst); });
}

void CpuOps::decompress4(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks,
                         void* dst) {
  requireAlgorithmDType("decompress4", dtype);
  comm_.enqueue("decompress4",
                [=] { kernels::decompress4Cpu(dtype, src, chunkElems, nChunks, dst); });
}

void CpuOps::reduceChunks(DType dtype, void* data, size_t chunkElems, int nChunks, int target,
                          bool average) {
  requireAlgorithmDType("reduceChunks", dtype);
  comm_.enqueue("reduceChunks", [=] {
    kernels::reduceChunksCpu(dtype, data, chunkElems, nChunks, target, average);
  });
}

void CpuOps::addScaled(DType dtype, void* out, const void* a, const void* b, size_t n,
                       float alpha) {
  requireAlgorithmDType("addScaled", dtype);
  comm_.enqueue("addScaled", [=] { kernels::addScaledCpu(dtype, out, a, b, n, alpha); });
}

void CpuOps::residual(DType dtype, void* out, const void* a, const void* b, size_t n) {
  requireAlgorithmDType("residual", dtype);
  comm_.enqueue("residual", [=] { kernels::residualCpu(dtype, out, a, b, n); });
}

std::shared_ptr<Work> CpuOps::fence(std::string what) {
  return comm_.enqueue(std::move(what), [] {});
}

}  // namespace bagua
