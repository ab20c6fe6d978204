// CUDA kernels of the element-wise steps around MinMaxUInt8
// (minmax_uint8_cuda.h): chunk reduction in Bagua's order, scale, addScaled.
// One launch each; 16-byte packs when every pointer allows, else elements.
#include "kernels/chunk_args.h"
#include "kernels/cuda_elements.cuh"
#include "kernels/minmax_uint8_cuda.h"

namespace bagua::kernels {
namespace {

// Each thread reduces whole packs of the target chunk: it reads pack p of
// every chunk before writing pack p of the target, so in place is safe.
template <typename E, int G>
__global__ void __launch_bounds__(kThreads)
    reduceChunksKernel(typename E::Bits* data, size_t chunkElems, int nChunks, int target,
                       bool average) {
  using Bits = typename E::Bits;
  const size_t packs = chunkElems / G;
  Bits* out = data + static_cast<size_t>(target) * chunkElems;
  for (size_t p = blockIdx.x * size_t{kThreads} + threadIdx.x; p < packs;
       p += size_t{gridDim.x} * kThreads) {
    float sum[G];
    minmax::baguaChunkSum<G>(
        nChunks,
        [&](int c, float(&v)[G]) {
          const Pack<Bits, G> x = loadPack<G>(data + static_cast<size_t>(c) * chunkElems + p * G);
#pragma unroll
          for (int e = 0; e < G; ++e) v[e] += E::toFloat(x.v[e]);
        },
        sum);
    Pack<Bits, G> r;
#pragma unroll
    for (int e = 0; e < G; ++e)
      r.v[e] = E::fromFloat(minmax::finishReduce(sum[e], nChunks, average));
    storePack<G>(out + p * G, r);
  }
}

// out = a + alpha * b. The product is rounded before the sum (__fmul_rn /
// __fadd_rn are never fused into an FMA), as on the CPU.
template <typename E>
struct AddScaledOp {
  float alpha;
  __device__ typename E::Bits operator()(typename E::Bits a, typename E::Bits b) const {
    return E::fromFloat(__fadd_rn(E::toFloat(a), __fmul_rn(alpha, E::toFloat(b))));
  }
};

// out = a - b, or 0 where that is not finite (residualCpu).
template <typename E>
struct ResidualOp {
  __device__ typename E::Bits operator()(typename E::Bits a, typename E::Bits b) const {
    const typename E::Bits d = E::fromFloat(__fsub_rn(E::toFloat(a), E::toFloat(b)));
    return minmax::isFiniteHd(E::toFloat(d)) ? d : E::fromFloat(0.0f);
  }
};

// out = op(a, b) element-wise: G elements per pack, then the tail one by one.
template <typename E, int G, typename Op>
__global__ void __launch_bounds__(kThreads)
    binaryKernel(typename E::Bits* out, const typename E::Bits* a, const typename E::Bits* b,
                 size_t n, Op op) {
  using Bits = typename E::Bits;
  const size_t stride = size_t{gridDim.x} * kThreads;
  const size_t first = blockIdx.x * size_t{kThreads} + threadIdx.x;
  const size_t packs = n / G;
  for (size_t p = first; p < packs; p += stride) {
    const Pack<Bits, G> x = loadPack<G>(a + p * G);
    const Pack<Bits, G> y = loadPack<G>(b + p * G);
    Pack<Bits, G> r;
#pragma unroll
    for (int e = 0; e < G; ++e) r.v[e] = op(x.v[e], y.v[e]);
    storePack<G>(out + p * G, r);
  }
  for (size_t i = packs * G + first; i < n; i += stride) out[i] = op(a[i], b[i]);
}

template <typename E, int G>
__global__ void __launch_bounds__(kThreads)
    scaleKernel(typename E::Bits* data, size_t n, float factor) {
  using Bits = typename E::Bits;
  const size_t stride = size_t{gridDim.x} * kThreads;
  const size_t first = blockIdx.x * size_t{kThreads} + threadIdx.x;
  const size_t packs = n / G;
  for (size_t p = first; p < packs; p += stride) {
    Pack<Bits, G> x = loadPack<G>(data + p * G);
#pragma unroll
    for (int e = 0; e < G; ++e) x.v[e] = E::fromFloat(__fmul_rn(E::toFloat(x.v[e]), factor));
    storePack<G>(data + p * G, x);
  }
  for (size_t i = packs * G + first; i < n; i += stride) {
    data[i] = E::fromFloat(__fmul_rn(E::toFloat(data[i]), factor));
  }
}

template <typename E>
cudaError_t launchReduceChunks(void* data, size_t chunkElems, int nChunks, int target, bool average,
                               cudaStream_t stream) {
  using Bits = typename E::Bits;
  if (chunkElems == 0) return cudaSuccess;
  int resident = 0;
  cudaError_t err = residentBlocks(&resident);
  if (err != cudaSuccess) return err;
  constexpr int kG = kVec<E>;
  Bits* x = static_cast<Bits*>(data);
  const bool vec = aligned16(x) && (chunkElems * sizeof(Bits)) % 16 == 0;
  const unsigned blocks = blocksFor(vec ? chunkElems / kG : chunkElems, resident);
  if (vec) {
    reduceChunksKernel<E, kG>
        <<<blocks, kThreads, 0, stream>>>(x, chunkElems, nChunks, target, average);
  } else {
    reduceChunksKernel<E, 1>
        <<<blocks, kThreads, 0, stream>>>(x, chunkElems, nChunks, target, average);
  }
  BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED();
  return cudaSuccess;
}

template <typename E>
cudaError_t launchScale(void* data, size_t n, float factor, cudaStream_t stream) {
  using Bits = typename E::Bits;
  if (n == 0) return cudaSuccess;
  int resident = 0;
  cudaError_t err = residentBlocks(&resident);
  if (err != cudaSuccess) return err;
  constexpr int kG = kVec<E>;
  Bits* x = static_cast<Bits*>(data);
  if (aligned16(x)) {
    scaleKernel<E, kG><<<blocksFor(n / kG + 1, resident), kThreads, 0, stream>>>(x, n, factor);
  } else {
    scaleKernel<E, 1><<<blocksFor(n, resident), kThreads, 0, stream>>>(x, n, factor);
  }
  BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED();
  return cudaSuccess;
}

// binaryKernel over n elements: packed where all three pointers are 16-byte aligned.
template <typename E, typename Op>
cudaError_t launchBinary(void* out, const void* a, const void* b, size_t n, Op op,
                         cudaStream_t stream) {
  using Bits = typename E::Bits;
  if (n == 0) return cudaSuccess;
  int resident = 0;
  cudaError_t err = residentBlocks(&resident);
  if (err != cudaSuccess) return err;
  constexpr int kG = kVec<E>;
  auto* o = static_cast<Bits*>(out);
  const auto* x = static_cast<const Bits*>(a);
  const auto* y = static_cast<const Bits*>(b);
  if (aligned16(o) && aligned16(x) && aligned16(y)) {
    binaryKernel<E, kG><<<blocksFor(n / kG + 1, resident), kThreads, 0, stream>>>(o, x, y, n, op);
  } else {
    binaryKernel<E, 1><<<blocksFor(n, resident), kThreads, 0, stream>>>(o, x, y, n, op);
  }
  BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED();
  return cudaSuccess;
}

}  // namespace

cudaError_t reduceChunks(DType dtype, void* data, size_t chunkElems, int nChunks, int target,
                         bool average, cudaStream_t stream) {
  checkChunkArgs("reduceChunks", dtype, chunkElems, nChunks, target, true);
  checkAligned("reduceChunks", "data", data, dtypeSize(dtype));
  return dispatchGpu(dtype, [&](auto e) {
    return launchReduceChunks<decltype(e)>(data, chunkElems, nChunks, target, average, stream);
  });
}

cudaError_t scale(DType dtype, void* data, size_t n, float factor, cudaStream_t stream) {
  checkElementArgs("scale", dtype, n);
  checkAligned("scale", "data", data, dtypeSize(dtype));
  return dispatchGpu(dtype,
                     [&](auto e) { return launchScale<decltype(e)>(data, n, factor, stream); });
}

cudaError_t addScaled(DType dtype, void* out, const void* a, const void* b, size_t n, float alpha,
                      cudaStream_t stream) {
  checkElementArgs("addScaled", dtype, n);
  checkAligned("addScaled", "out", out, dtypeSize(dtype));
  checkAligned("addScaled", "a", a, dtypeSize(dtype));
  checkAligned("addScaled", "b", b, dtypeSize(dtype));
  return dispatchGpu(
      dtype, [&](auto e) {
        using E = decltype(e);
        return launchBinary<E>(out, a, b, n, AddScaledOp<E>{alpha}, stream);
      });
}

cudaError_t residual(DType dtype, void* out, const void* a, const void* b, size_t n,
                     cudaStream_t stream) {
  checkElementArgs("residual", dtype, n);
  checkAligned("residual", "out", out, dtypeSize(dtype));
  checkAligned("residual", "a", a, dtypeSize(dtype));
  checkAligned("residual", "b", b, dtypeSize(dtype));
  return dispatchGpu(dtype,
                     [&](auto e) {
                       using E = decltype(e);
                       return launchBinary<E>(out, a, b, n, ResidualOp<E>{}, stream);
                     });
}

}  // namespace bagua::kernels
