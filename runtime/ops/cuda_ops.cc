// CudaOps. Every call makes the communicator's device current first: the
// calling thread may be a runtime thread (the asynchronous model average's
// rounds) whose current device is still 0, and allocations, kernel launches
// and events go to the current device.
#include "runtime/ops/cuda_ops.h"

#include "kernels/minmax_uint4_cuda.h"
#include "kernels/minmax_uint8_cuda.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_scope.h"

namespace bagua {
namespace {

class CudaBuffer final : public DeviceBuffer {
 public:
  explicit CudaBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes_ == 0) return;
    BAGUA_CUDA_CHECK(cudaMalloc(&data_, bytes_));
    // Zero before any stream may touch it: another stream (the training
    // stream filling an async average's snapshot) is not ordered after the
    // communicator's. On a stream of its own, so the wait is for the memset
    // alone, never for a collective the communicator's stream may be stuck in.
    cudaStream_t own = nullptr;
    cudaError_t err = cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
    if (err == cudaSuccess) {
      err = cudaMemsetAsync(data_, 0, bytes_, own);
      if (err == cudaSuccess) err = cudaStreamSynchronize(own);
      cudaStreamDestroy(own);
    }
    if (err != cudaSuccess) {
      cudaFree(data_);  // no destructor runs for a constructor that throws
      data_ = nullptr;
    }
    BAGUA_CUDA_CHECK(err);
  }
  ~CudaBuffer() override {
    if (data_ != nullptr) cudaFree(data_);
  }
  void* data() override { return data_; }
  size_t bytes() const override { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

}  // namespace

std::unique_ptr<DeviceBuffer> CudaOps::allocate(size_t bytes) {
  DeviceScope scope(comm_.cudaDevice());
  return std::make_unique<CudaBuffer>(bytes);
}

void CudaOps::copy(void* dst, const void* src, size_t bytes) {
  DeviceScope scope(comm_.cudaDevice());
  if (dst == src || bytes == 0) return;
  BAGUA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, comm_.stream()));
}

void CudaOps::zero(void* dst, size_t bytes) {
  DeviceScope scope(comm_.cudaDevice());
  if (bytes == 0) return;
  BAGUA_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, comm_.stream()));
}

void CudaOps::compress(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                       uint8_t* dst) {
  DeviceScope scope(comm_.cudaDevice());
  requireAlgorithmDType("compress", dtype);
  BAGUA_CUDA_CHECK(kernels::compress(dtype, src, chunkElems, nChunks, target, dst, comm_.stream()));
}

void CudaOps::decompress(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks,
                         void* dst) {
  DeviceScope scope(comm_.cudaDevice());
  requireAlgorithmDType("decompress", dtype);
  BAGUA_CUDA_CHECK(kernels::decompress(dtype, src, chunkElems, nChunks, dst, comm_.stream()));
}

void CudaOps::compress4(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                        uint8_t* dst) {
  DeviceScope scope(comm_.cudaDevice());
  requireAlgorithmDType("compress4", dtype);
  BAGUA_CUDA_CHECK(
      kernels::compress4(dtype, src, chunkElems, nChunks, target, dst, comm_.stream()));
}

void CudaOps::decompress4(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks,
                          void* dst) {
  DeviceScope scope(comm_.cudaDevice());
  requireAlgorithmDType("decompress4", dtype);
  BAGUA_CUDA_CHECK(kernels::decompress4(dtype, src, chunkElems, nChunks, dst, comm_.stream()));
}

void CudaOps::reduceChunks(DType dtype, void* data, size_t chunkElems, int nChunks, int target,
                           bool average) {
  DeviceScope scope(comm_.cudaDevice());
  requireAlgorithmDType("reduceChunks", dtype);
  BAGUA_CUDA_CHECK(
      kernels::reduceChunks(dtype, data, chunkElems, nChunks, target, average, comm_.stream()));
}

void CudaOps::addScaled(DType dtype, void* out, const void* a, const void* b, size_t n,
                        float alpha) {
  DeviceScope scope(comm_.cudaDevice());
  requireAlgorithmDType("addScaled", dtype);
  BAGUA_CUDA_CHECK(kernels::addScaled(dtype, out, a, b, n, alpha, comm_.stream()));
}

void CudaOps::residual(DType dtype, void* out, const void* a, const void* b, size_t n) {
  DeviceScope scope(comm_.cudaDevice());
  requireAlgorithmDType("residual", dtype);
  BAGUA_CUDA_CHECK(kernels::residual(dtype, out, a, b, n, comm_.stream()));
}

}  // namespace bagua
