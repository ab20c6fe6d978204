// The fused optimizers' CUDA kernels (kernels/optim/optim_cuda.h) against
// the CPU reference (suite 'gpu', skipped without a GPU): SGD, Adam/AdamW and
// Adagrad bit for bit over mixed sizes, every dtype pair, master weights,
// tensors starting off a 16-byte boundary (the element path) and several
// steps; LAMB within fp32 rounding of its norms; the AMP unscale and the
// skip on a device found_inf.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/optim/optim_cpu.h"
#include "kernels/optim/optim_cuda.h"
#include "tests/kernels/optim_cases.h"

namespace bagua::kernels::optim {
namespace {

using testing::makeOptimCase;
using testing::mixedSizes;
using testing::OptimCase;

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

// The case's buffers on the device, each `shift` elements into its allocation.
class DeviceCase {
 public:
  DeviceCase(OptimCase& host, size_t shift) : host_(host) {
    refs_ = host.refs();
    for (auto& r : refs_) {
      for (int s = 0; s < kSlots; ++s) {
        if (r.ptr[s] == nullptr) continue;
        const size_t width = host.bytes[s][&r - refs_.data()].size() / r.numel;
        void* d = nullptr;
        if (cudaMalloc(&d, (r.numel + shift) * width) != cudaSuccess) throw std::bad_alloc();
        allocations_.push_back(d);
        void* at = static_cast<uint8_t*>(d) + shift * width;
        cudaMemcpy(at, r.ptr[s], r.numel * width, cudaMemcpyHostToDevice);
        r.ptr[s] = at;
      }
    }
  }
  ~DeviceCase() {
    for (void* p : allocations_) cudaFree(p);
  }
  const std::vector<TensorRef>& refs() const { return refs_; }
  // Device gradients <- host gradients; host buffers <- device buffers.
  void uploadGrads() {
    for (size_t t = 0; t < refs_.size(); ++t) {
      cudaMemcpy(refs_[t].ptr[kGrad], host_.bytes[kGrad][t].data(), host_.bytes[kGrad][t].size(),
                 cudaMemcpyHostToDevice);
    }
  }
  void download(OptimCase& into) const {
    for (int s = 0; s < kSlots; ++s) {
      for (size_t t = 0; t < into.bytes[s].size(); ++t) {
        cudaMemcpy(into.bytes[s][t].data(), refs_[t].ptr[s], into.bytes[s][t].size(),
                   cudaMemcpyDeviceToHost);
      }
    }
  }

 private:
  OptimCase& host_;
  std::vector<TensorRef> refs_;
  std::vector<void*> allocations_;
};

// LAMB: the moments with the CPU's bits, parameters within the rounding of
// the norms (summed in another order).
void expectLambClose(const OptimCase& got, const OptimCase& want, const std::string& what) {
  EXPECT_EQ(got.bytes[kState0], want.bytes[kState0]) << what;
  EXPECT_EQ(got.bytes[kState1], want.bytes[kState1]) << what;
  for (size_t t = 0; t < got.numel.size(); ++t) {
    for (size_t i = 0; i < got.numel[t]; ++i) {
      const float g = got.at(kParam, t, i), w = want.at(kParam, t, i);
      ASSERT_NEAR(g, w, 1e-6f * (1.0f + std::fabs(w)))
          << what << ": tensor " << t << " element " << i;
    }
  }
}

class OptimCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU: " << cudaGetErrorString(err);
  }

  // Runs `steps` steps on the GPU (gpu) and the CPU (cpu) from the same case;
  // returns both results.
  void run(ListTypes types, unsigned slots, size_t shift, int steps,
           const std::function<cudaError_t(const DeviceTensorList&, int)>& gpu,
           const std::function<void(const std::vector<TensorRef>&, int)>& cpu, OptimCase& gotOut,
           OptimCase& wantOut, int pack = kAutoPack, size_t chunk = kDefaultChunkElems,
           LambLayout lamb = {}, const std::vector<size_t>& sizes = mixedSizes()) {
    OptimCase want = makeOptimCase(types, sizes, slots, 5 + shift);
    OptimCase got = want;
    DeviceCase device(got, shift);
    DeviceTensorList list(device.refs(), types, chunk, lamb, pack);
    for (int step = 1; step <= steps; ++step) {
      got.newGrads(900 + step);
      want.newGrads(900 + step);
      device.uploadGrads();
      ASSERT_CUDA(gpu(list, step));
      cpu(want.refs(), step);
    }
    ASSERT_CUDA(cudaDeviceSynchronize());
    device.download(got);
    gotOut = got;
    wantOut = want;
  }

  // LAMB (weight decay 0.01) for `steps` steps on the GPU and the CPU;
  // expects them within the rounding of the norms (expectLambClose).
  void runLamb(ListTypes types, int steps, size_t chunk, LambLayout layout,
               const std::vector<size_t>& sizes, const std::string& what) {
    OptimCase got, want;
    LambArgs lamb;
    lamb.weightDecay = 0.01;
    run(
        types, slotBit(kState0) | slotBit(kState1), 0, steps,
        [&](const DeviceTensorList& l, int step) {
          lamb.step = step;
          return lambStep(l, lamb, {}, nullptr);
        },
        [&](const std::vector<TensorRef>& r, int step) {
          lamb.step = step;
          lambStepCpu(r, types, lamb);
        },
        got, want, kAutoPack, chunk, layout, sizes);
    expectLambClose(got, want, what);
  }
};

const ListTypes kTypes[] = {{DType::kFloat32, DType::kFloat32},
                            {DType::kBFloat16, DType::kFloat32},
                            {DType::kBFloat16, DType::kBFloat16},
                            {DType::kFloat16, DType::kFloat32}};

TEST_F(OptimCuda, ElementwiseOptimizersGiveTheCpuBits) {
  for (ListTypes types : kTypes) {
    for (auto [shift, pack] : {std::pair<size_t, int>{0, 4}, {0, 8}, {1, 4}, {3, 8}}) {
      const unsigned master = types.param != DType::kFloat32 ? slotBit(kMaster) : 0u;
      OptimCase got, want;
      SgdArgs sgd;
      sgd.lr = 0.05;
      sgd.momentum = 0.9;
      sgd.nesterov = true;
      sgd.weightDecay = 0.01;
      run(
          types, slotBit(kState0), shift, 3,
          [&](const DeviceTensorList& l, int step) {
            sgd.firstStep = step == 1;
            return sgdStep(l, sgd, {}, nullptr);
          },
          [&](const std::vector<TensorRef>& r, int step) {
            sgd.firstStep = step == 1;
            sgdStepCpu(r, types, sgd);
          },
          got, want, pack);
      EXPECT_EQ(got.bytes, want.bytes) << "sgd, shift " << shift << ", pack " << pack;
      AdamArgs adam;
      adam.decoupled = true;
      adam.weightDecay = 0.1;
      adam.amsgrad = true;
      run(
          types, slotBit(kState0) | slotBit(kState1) | slotBit(kState2) | master, shift, 3,
          [&](const DeviceTensorList& l, int step) {
            adam.step = step;
            return adamStep(l, adam, {}, nullptr);
          },
          [&](const std::vector<TensorRef>& r, int step) {
            adam.step = step;
            adamStepCpu(r, types, adam);
          },
          got, want, pack);
      EXPECT_EQ(got.bytes, want.bytes) << "adamw amsgrad, shift " << shift << ", pack " << pack;
      AdagradArgs adagrad;
      adagrad.lrDecay = 0.01;
      run(
          types, slotBit(kState0), shift, 3,
          [&](const DeviceTensorList& l, int step) {
            adagrad.step = step;
            return adagradStep(l, adagrad, {}, nullptr);
          },
          [&](const std::vector<TensorRef>& r, int step) {
            adagrad.step = step;
            adagradStepCpu(r, types, adagrad);
          },
          got, want, pack);
      EXPECT_EQ(got.bytes, want.bytes) << "adagrad, shift " << shift << ", pack " << pack;
    }
  }
}

TEST_F(OptimCuda, LambWithinRoundingOfItsNorms) {
  runLamb({DType::kFloat32, DType::kFloat32}, 3, kDefaultChunkElems, {}, mixedSizes(), "one batch");
}

// Several batches: the persistent kernel (lamb_schedule.h), over several
// steps (its queue resets itself between launches), with a grid of one
// block per SM and a lookahead of one block (pass-2 items wait), with every
// block that fits, on a few hundred tensors of mixed sizes, and with batches
// of 8 tensors or more (their trust ratios a warp per tensor).
TEST_F(OptimCuda, LambPersistentKernelWithinRoundingOfItsNorms) {
  std::vector<size_t> many, small;
  for (size_t t = 0; t < 300; ++t) many.push_back(1 + (t * 7919) % 30000);
  for (size_t t = 0; t < 400; ++t) small.push_back(1 + (t * 7919) % 2000);
  struct Case {
    const char* name;
    size_t chunk;
    LambLayout layout;
    std::vector<size_t> sizes;
  };
  const Case cases[] = {{"batches of 5000", 1024, {5000, 0, 0}, mixedSizes()},
                        {"lookahead 1, 1 block/SM", 1024, {5000, 1, 1}, mixedSizes()},
                        {"lookahead 1000", 512, {3000, 1000, 0}, mixedSizes()},
                        {"300 tensors", 1024, {100000, 0, 0}, many},
                        {"300 tensors, 2 blocks/SM", 2048, {60000, 64, 2}, many},
                        {"about 20 tensors a batch", 1024, {20000, 0, 0}, small}};
  for (const Case& c : cases) {
    for (ListTypes types : {ListTypes{DType::kFloat32, DType::kFloat32},
                            ListTypes{DType::kBFloat16, DType::kFloat32}}) {
      runLamb(types, 4, c.chunk, c.layout, c.sizes, c.name);
    }
  }
}

// The AMP unscale in the kernel: gradients divided by the device scale and
// written back, the CPU's bits (gradients included).
TEST_F(OptimCuda, DeviceGradScaleUnscalesLikeTheCpu) {
  float* scale = nullptr;
  ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&scale), sizeof(float)));
  const float hostScale = 512.0f;
  ASSERT_CUDA(cudaMemcpy(scale, &hostScale, sizeof(float), cudaMemcpyHostToDevice));
  const ListTypes types{DType::kBFloat16, DType::kFloat32};
  OptimCase got, want;
  AdamArgs adam;
  run(
      types, slotBit(kState0) | slotBit(kState1), 0, 2,
      [&](const DeviceTensorList& l, int step) {
        adam.step = step;
        return adamStep(l, adam, AmpArgs{nullptr, scale}, nullptr);
      },
      [&](const std::vector<TensorRef>& r, int step) {
        adam.step = step;
        adamStepCpu(r, types, adam, AmpArgs{nullptr, &hostScale});
      },
      got, want);
  cudaFree(scale);
  EXPECT_EQ(got.bytes, want.bytes);
}

TEST_F(OptimCuda, DeviceFoundInfSkipsTheStep) {
  OptimCase host = makeOptimCase({DType::kFloat32, DType::kFloat32}, mixedSizes(),
                                 slotBit(kState0) | slotBit(kState1), 3);
  const OptimCase before = host;
  DeviceCase device(host, 0);
  DeviceTensorList list(device.refs(), host.types);
  float* flag = nullptr;
  ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&flag), sizeof(float)));
  const float one = 1.0f;
  ASSERT_CUDA(cudaMemcpy(flag, &one, sizeof(float), cudaMemcpyHostToDevice));
  ASSERT_CUDA(adamStep(list, AdamArgs{}, AmpArgs{flag, nullptr}, nullptr));
  ASSERT_CUDA(lambStep(list, LambArgs{}, AmpArgs{flag, nullptr}, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  device.download(host);
  EXPECT_EQ(host.bytes, before.bytes);

  // The persistent kernel skips too, and its queue still runs the next step.
  DeviceTensorList queued(device.refs(), host.types, 1024, LambLayout{5000, 0, 0});
  ASSERT_CUDA(lambStep(queued, LambArgs{}, AmpArgs{flag, nullptr}, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  device.download(host);
  EXPECT_EQ(host.bytes, before.bytes);
  const float zero = 0.0f;
  ASSERT_CUDA(cudaMemcpy(flag, &zero, sizeof(float), cudaMemcpyHostToDevice));
  ASSERT_CUDA(lambStep(queued, LambArgs{}, AmpArgs{flag, nullptr}, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  device.download(host);
  OptimCase want = before;
  lambStepCpu(want.refs(), want.types, LambArgs{});
  expectLambClose(host, want, "after a skipped step");
  cudaFree(flag);
}

}  // namespace
}  // namespace bagua::kernels::optim
