// Device side of kernels/: element types as raw bits <-> fp32 (cuda_fp16 /
// cuda_bf16, round to nearest even, canonical NaN like the CPU reference),
// 16-byte packs for vector loads and stores, launch sizing and the dispatch
// from DType. Included by the .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/minmax_uint8_math.h"

namespace bagua::kernels {

struct GpuFloat32 {
  using Bits = uint32_t;
  static constexpr Bits kNan = 0x7fffffffu;
  static constexpr float kMaxFinite = 3.40282347e38f;
  __device__ static float toFloat(Bits b) { return __uint_as_float(b); }
  __device__ static Bits fromFloat(float f) {
    return minmax::isNanHd(f) ? kNan : __float_as_uint(f);
  }
};

struct GpuFloat16 {
  using Bits = uint16_t;
  static constexpr Bits kNan = 0x7fffu;
  static constexpr float kMaxFinite = 65504.0f;
  __device__ static float toFloat(Bits b) { return __half2float(__ushort_as_half(b)); }
  __device__ static Bits fromFloat(float f) {
    return minmax::isNanHd(f) ? kNan : __half_as_ushort(__float2half_rn(f));
  }
};

struct GpuBFloat16 {
  using Bits = uint16_t;
  static constexpr Bits kNan = 0x7fffu;
  static constexpr float kMaxFinite = 3.38953139e38f;  // 0x7f7f
  __device__ static float toFloat(Bits b) { return __bfloat162float(__ushort_as_bfloat16(b)); }
  __device__ static Bits fromFloat(float f) {
    return minmax::isNanHd(f) ? kNan : __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
};

// G elements (or code bytes) loaded or stored as one aligned access.
template <typename T, int G>
struct alignas(sizeof(T) * G) Pack {
  T v[G];
};

template <int G, typename T>
__device__ __forceinline__ Pack<T, G> loadPack(const T* p) {
  return *reinterpret_cast<const Pack<T, G>*>(p);
}

template <int G, typename T>
__device__ __forceinline__ void storePack(T* p, const Pack<T, G>& v) {
  *reinterpret_cast<Pack<T, G>*>(p) = v;
}

// Elements per 16-byte pack.
template <typename E>
constexpr int kVec = static_cast<int>(16 / sizeof(typename E::Bits));

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;  // 8 x 256 threads fill an SM of sm_80 / sm_90

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Blocks that keep the current device busy: SMs x kBlocksPerSm.
inline cudaError_t residentBlocks(int* blocks) {
  int device = 0;
  int sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  *blocks = (sms > 0 ? sms : 1) * kBlocksPerSm;
  return err;
}

// Blocks for `work` items of kThreads each, at most `limit`, at least 1.
inline unsigned blocksFor(size_t work, int limit) {
  size_t need = (work + kThreads - 1) / kThreads;
  size_t cap = limit > 0 ? static_cast<size_t>(limit) : 1;
  return static_cast<unsigned>(need < 1 ? 1 : need < cap ? need : cap);
}

// Calls fn(Traits{}) with the device traits of dtype, a float type (the
// callers check it first); cudaErrorInvalidValue for others.
template <typename Fn>
cudaError_t dispatchGpu(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(GpuFloat32{});
    case DType::kFloat16:
      return fn(GpuFloat16{});
    case DType::kBFloat16:
      return fn(GpuBFloat16{});
    case DType::kFloat64:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt32:
    case DType::kInt64:
      break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace bagua::kernels

// Returns the error of the last launch, if any (file-local use in .cu files).
#define BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED()                         \
  do {                                                                  \
    cudaError_t bagua_launch_status = cudaGetLastError();               \
    if (bagua_launch_status != cudaSuccess) return bagua_launch_status; \
  } while (false)
