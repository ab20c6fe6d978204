// StepOps on a CUDA stream.
#include "runtime/ops/cuda_step_ops.h"

#include <thread>

#include "kernels/minmax_uint8_cuda.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_scope.h"
#include "runtime/cuda/stream_event.h"

namespace bagua {
namespace {

// Finished when the stream passed the event (polled; waits sleep 50 us); a
// communicator's stream waits for it on the GPU (StreamEvent).
class StreamEventWork final : public Work, public StreamEvent {
 public:
  StreamEventWork(cudaStream_t stream, std::string what) : what_(std::move(what)) {
    BAGUA_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    BAGUA_CUDA_CHECK(cudaEventRecord(event_, stream));
  }
  ~StreamEventWork() override { cudaEventDestroy(event_); }

  bool done() override {
    cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) return false;
    if (status != cudaSuccess) {
      BAGUA_THROW(CudaError, what_ + " failed: " + cudaGetErrorString(status));
    }
    return true;
  }
  void wait(std::chrono::milliseconds timeout) override {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) {
        BAGUA_THROW(TimeoutError, what_ + " did not finish within " +
                                      std::to_string(timeout.count()) + " ms");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  const std::string& what() const override { return what_; }
  cudaEvent_t event() const override { return event_; }

 private:
  std::string what_;
  cudaEvent_t event_ = nullptr;
};

class CudaStepOps final : public StepOps {
 public:
  CudaStepOps(cudaStream_t stream, int device) : stream_(stream), device_(device) {}

  void copy(void* dst, const void* src, size_t bytes) override {
    if (dst == src || bytes == 0) return;
    DeviceScope scope(device_);
    BAGUA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
  }
  void addScaled(DType dtype, void* out, const void* a, const void* b, size_t n,
                 float alpha) override {
    DeviceScope scope(device_);
    BAGUA_CUDA_CHECK(kernels::addScaled(dtype, out, a, b, n, alpha, stream_));
  }
  std::shared_ptr<Work> fence(std::string what) override {
    DeviceScope scope(device_);  // the event must live on the stream's device
    return std::make_shared<StreamEventWork>(stream_, std::move(what));
  }

 private:
  cudaStream_t stream_;
  int device_;
};

}  // namespace

std::unique_ptr<StepOps> cudaStepOps(cudaStream_t stream, int device) {
  return std::make_unique<CudaStepOps>(stream, device);
}

}  // namespace bagua
