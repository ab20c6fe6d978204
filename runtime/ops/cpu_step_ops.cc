// StepOps on CPU: inline.
#include <cstring>

#include "kernels/minmax_uint8.h"
#include "runtime/ops/step_ops.h"

namespace bagua {
namespace {

class CpuStepOps final : public StepOps {
 public:
  void copy(void* dst, const void* src, size_t bytes) override {
    if (dst != src && bytes > 0) std::memcpy(dst, src, bytes);
  }
  void addScaled(DType dtype, void* out, const void* a, const void* b, size_t n,
                 float alpha) override {
    kernels::addScaledCpu(dtype, out, a, b, n, alpha);
  }
  std::shared_ptr<Work> fence(std::string what) override {
    auto work = std::make_shared<PromiseWork>(std::move(what));
    work->succeed();
    return work;
  }
};

}  // namespace

std::unique_ptr<StepOps> cpuStepOps() { return std::make_unique<CpuStepOps>(); }

}  // namespace bagua
