// CUDA bitwise slice reduction (reduce_slices_cuda.h): one grid-stride
// kernel per op over 8-byte words or bytes.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cpu_reduce.h"
#include "kernels/cuda_elements.cuh"
#include "kernels/reduce_slices_cuda.h"

namespace bagua::kernels {
namespace {

struct And {
  template <typename W>
  __device__ W operator()(W a, W b) const {
    return a & b;
  }
};
struct Or {
  template <typename W>
  __device__ W operator()(W a, W b) const {
    return a | b;
  }
};
struct Xor {
  template <typename W>
  __device__ W operator()(W a, W b) const {
    return a ^ b;
  }
};

// Word i of out is the op over word i of every slice; slices are `words`
// words apart. Reads every slice's word before writing (out may be slice 0).
template <typename W, typename Op>
__global__ void __launch_bounds__(kThreads)
    reduceSlicesKernel(const W* slices, size_t words, int nSlices, W* out) {
  const Op op;
  for (size_t i = blockIdx.x * size_t{kThreads} + threadIdx.x; i < words;
       i += size_t{gridDim.x} * kThreads) {
    W acc = slices[i];
    for (int s = 1; s < nSlices; ++s) acc = op(acc, slices[static_cast<size_t>(s) * words + i]);
    out[i] = acc;
  }
}

template <typename W, typename Op>
cudaError_t launch(const void* slices, size_t bytes, int nSlices, void* out, cudaStream_t stream) {
  int resident = 0;
  cudaError_t err = residentBlocks(&resident);
  if (err != cudaSuccess) return err;
  const size_t words = bytes / sizeof(W);
  reduceSlicesKernel<W, Op><<<blocksFor(words, resident), kThreads, 0, stream>>>(
      static_cast<const W*>(slices), words, nSlices, static_cast<W*>(out));
  BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED();
  return cudaSuccess;
}

template <typename Op>
cudaError_t launchWords(const void* slices, size_t bytes, int nSlices, void* out,
                        cudaStream_t stream) {
  // 8-byte words when every slice starts on one (bitwise ops ignore element
  // boundaries), else bytes.
  const bool words = bytes % 8 == 0 && reinterpret_cast<uintptr_t>(slices) % 8 == 0 &&
                     reinterpret_cast<uintptr_t>(out) % 8 == 0;
  return words ? launch<uint64_t, Op>(slices, bytes, nSlices, out, stream)
               : launch<uint8_t, Op>(slices, bytes, nSlices, out, stream);
}

}  // namespace

cudaError_t reduceSlices(DType dtype, ReduceOp op, const void* slices, size_t n, int nSlices,
                         void* out, cudaStream_t stream) {
  checkReduction("reduceSlices", dtype, op);
  if (!isBitwiseOp(op)) {
    throw std::invalid_argument(std::string("bagua::kernels::reduceSlices: op ") +
                                reduceOpName(op) + " is not bitwise (band, bor or bxor)");
  }
  if (nSlices < 1) {
    throw std::invalid_argument(
        "bagua::kernels::reduceSlices: nSlices = " + std::to_string(nSlices) + ", expected >= 1");
  }
  const size_t bytes = n * dtypeSize(dtype);
  if (bytes == 0) return cudaSuccess;
  switch (op) {
    case ReduceOp::kBand:
      return launchWords<And>(slices, bytes, nSlices, out, stream);
    case ReduceOp::kBor:
      return launchWords<Or>(slices, bytes, nSlices, out, stream);
    default:
      return launchWords<Xor>(slices, bytes, nSlices, out, stream);
  }
}

}  // namespace bagua::kernels
