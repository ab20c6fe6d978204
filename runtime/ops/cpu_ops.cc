// CpuOps: CPU reference kernels run as ordered tasks of the Gloo worker.
#include "runtime/ops/cpu_ops.h"

#include <cstring>
#include <vector>

#include "kernels/float_bits.h"
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

float load(DType dtype, const void* p, size_t i) {
  switch (dtype) {
    case DType::kFloat32:
      return static_cast<const float*>(p)[i];
    case DType::kFloat16:
      return kernels::halfToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kBFloat16:
      return kernels::bf16ToFloat(static_cast<const uint16_t*>(p)[i]);
  }
  return 0;
}

void store(DType dtype, void* p, size_t i, float v) {
  switch (dtype) {
    case DType::kFloat32:
      static_cast<float*>(p)[i] = v;
      return;
    case DType::kFloat16:
      static_cast<uint16_t*>(p)[i] = kernels::floatToHalf(v);
      return;
    case DType::kBFloat16:
      static_cast<uint16_t*>(p)[i] = kernels::floatToBf16(v);
      return;
  }
}

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
  comm_.enqueue("compress",
                [=] { kernels::compressCpu(dtype, src, chunkElems, nChunks, target, dst); });
}

void CpuOps::decompress(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks,
                        void* dst) {
  comm_.enqueue("decompress",
                [=] { kernels::decompressCpu(dtype, src, chunkElems, nChunks, dst); });
}

void CpuOps::reduceChunks(DType dtype, void* data, size_t chunkElems, int nChunks, int target,
                          bool average) {
  comm_.enqueue("reduceChunks", [=] {
    kernels::reduceChunksCpu(dtype, data, chunkElems, nChunks, target, average);
  });
}

void CpuOps::addScaled(DType dtype, void* out, const void* a, const void* b, size_t n,
                       float alpha) {
  comm_.enqueue("addScaled", [=] {
    for (size_t i = 0; i < n; ++i)
      store(dtype, out, i, load(dtype, a, i) + alpha * load(dtype, b, i));
  });
}

std::shared_ptr<Work> CpuOps::fence(std::string what) {
  return comm_.enqueue(std::move(what), [] {});
}

}  // namespace bagua
