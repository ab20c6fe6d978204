// Device side of the fused optimizers: the uploaded table of a tensor list
// (DeviceTensorList::Impl), element loads and stores in fp32, and the
// multi-tensor kernel that walks each block's segments (segments.h) and
// calls an optimizer's element operation on every element. Included by the
// optimizer .cu files only.
//
// An operation Op provides
//   kReadsGrad, kWritesParam, kWritesState            what the walk loads and stores
//   kL2Loads       loads from L2 only: data that other blocks of the same
//                  launch wrote (an SM's L1 is not coherent with them)
//   __device__ void operator()(float& p, float g, float (&s)[3])
//   __device__ void begin(const DeviceTable&, uint32_t segment)   before a segment
//   __device__ void end(const DeviceTable&, uint32_t segment)     after it (every thread)
// A fresh copy of the operation serves each segment in each thread.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda_elements.cuh"  // Pack, kThreads
#include "kernels/optim/optim_cuda.h"
#include "kernels/optim/segments.h"

namespace bagua::kernels::optim {

struct DeviceTable {
  const uint64_t* ptrs = nullptr;  // [kSlots][n], slot-major; 0: unused
  const uint32_t* segTensor = nullptr;
  const uint64_t* segOffset = nullptr;
  const uint32_t* segLength = nullptr;
  const uint32_t* blockBegin = nullptr;
  const uint32_t* tensorBegin = nullptr;
  float* partial = nullptr;  // LAMB: 2 per segment (|p|^2, |u|^2 of the segment)
  float* trust = nullptr;    // LAMB: per tensor
  uint32_t n = 0;
};

// LAMB's persistent kernel over several batches (lamb_schedule.h); items
// null: one batch, no queue.
struct LambQueue {
  const uint32_t* items = nullptr;       // hand-out order
  const uint32_t* blockBatch = nullptr;  // per block
  const Batch* batches = nullptr;
  uint32_t* firstPassDone = nullptr;  // per batch: its pass-1 blocks done (the last resets it)
  uint32_t* ready = nullptr;          // per batch: the step whose trust ratios are written
  // [0] next item, [1] blocks that ran out of items, [2] the last step run;
  // the last block out resets [0] and [1], so the next launch starts afresh.
  uint32_t* counters = nullptr;
  uint32_t itemCount = 0;
};

struct DeviceTensorList::Impl {
  DeviceTable table;
  LambQueue queue;
  uint32_t lambGrid = 0;  // the persistent kernel's blocks (queue.items set)
  void* memory = nullptr;
  std::vector<Batch> batches;
  size_t tensors = 0, elements = 0, blocks = 0;
  int packElems = 4;
  ListTypes types;
  unsigned mask = 0;
};

// The persistent LAMB kernel's grid on the current device: blocksPerSm
// (0: as many as fit) times the SMs. Throws std::runtime_error.
uint32_t lambQueueGrid(const DeviceTensorList::Impl& list, uint32_t blocksPerSm);

struct DevF32 {
  using Bits = float;
  __device__ static float load(Bits b) { return b; }
  __device__ static Bits store(float f) { return f; }
};
struct DevF16 {
  using Bits = uint16_t;
  __device__ static float load(Bits b) { return __half2float(__ushort_as_half(b)); }
  __device__ static Bits store(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
struct DevBF16 {
  using Bits = uint16_t;
  __device__ static float load(Bits b) { return __bfloat162float(__ushort_as_bfloat16(b)); }
  __device__ static Bits store(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
};

__device__ __forceinline__ bool stepSkipped(const AmpArgs& amp) {
  return amp.foundInf != nullptr && *amp.foundInf != 0.0f;
}

// The addresses of one segment's first element in each slot.
template <typename P, typename S>
struct SegmentPtrs {
  typename P::Bits* param;
  typename P::Bits* grad;
  typename S::Bits* state[3];
  float* master;

  __device__ SegmentPtrs(const DeviceTable& t, uint32_t tensor, uint64_t offset) {
    auto at = [&](int slot) { return t.ptrs[static_cast<size_t>(slot) * t.n + tensor]; };
    param = reinterpret_cast<typename P::Bits*>(at(kParam)) + offset;
    grad = reinterpret_cast<typename P::Bits*>(at(kGrad)) + offset;
    for (int k = 0; k < 3; ++k) {
      const uint64_t a = at(kState0 + k);
      state[k] = a != 0 ? reinterpret_cast<typename S::Bits*>(a) + offset : nullptr;
    }
    const uint64_t m = at(kMaster);
    master = m != 0 ? reinterpret_cast<float*>(m) + offset : nullptr;
  }
};

constexpr uint32_t kNoVector = 0xffffffffu;

// Elements before the first index where p is aligned for a pack of G.
template <int G, typename T>
__device__ __forceinline__ uint32_t headOf(const T* p) {
  return static_cast<uint32_t>((G - (reinterpret_cast<uintptr_t>(p) / sizeof(T)) % G) % G);
}

// The same for every used slot, or kNoVector when they are misaligned differently.
template <int G, typename P, typename S, typename Op>
__device__ __forceinline__ uint32_t vectorHead(const SegmentPtrs<P, S>& q) {
  const uint32_t head = headOf<G>(q.param);
  bool same = !Op::kReadsGrad || headOf<G>(q.grad) == head;
  for (int k = 0; k < 3; ++k) {
    same = same && (q.state[k] == nullptr || headOf<G>(q.state[k]) == head);
  }
  same = same && (q.master == nullptr || headOf<G>(q.master) == head);
  return same ? head : kNoVector;
}

// G elements of type T at p; from L2 only (ld.global.cg) when L2.
template <bool L2, int G, typename T>
__device__ __forceinline__ Pack<T, G> loadAt(const T* p) {
  if constexpr (!L2) {
    return loadPack<G>(p);
  } else {
    Pack<T, G> out;
    constexpr size_t kBytes = sizeof(out);
    if constexpr (kBytes % 16 == 0) {
#pragma unroll
      for (size_t k = 0; k < kBytes / 16; ++k) {
        reinterpret_cast<uint4*>(&out)[k] = __ldcg(reinterpret_cast<const uint4*>(p) + k);
      }
    } else if constexpr (kBytes == 8) {
      *reinterpret_cast<uint2*>(&out) = __ldcg(reinterpret_cast<const uint2*>(p));
    } else if constexpr (kBytes == 4) {
      *reinterpret_cast<unsigned*>(&out) = __ldcg(reinterpret_cast<const unsigned*>(p));
    } else {
      static_assert(kBytes == 2);
      *reinterpret_cast<unsigned short*>(&out) = __ldcg(reinterpret_cast<const unsigned short*>(p));
    }
    return out;
  }
}

// G elements at index i: load, operate, store.
template <int G, typename P, typename S, typename Op>
__device__ __forceinline__ void elements(const SegmentPtrs<P, S>& q, uint32_t i, const float* scale,
                                         Op& op) {
  using PB = typename P::Bits;
  using SB = typename S::Bits;
  float p[G], g[G], s[3][G];
  if (q.master != nullptr) {
    const Pack<float, G> x = loadAt<Op::kL2Loads, G>(q.master + i);
#pragma unroll
    for (int e = 0; e < G; ++e) p[e] = x.v[e];
  } else {
    const Pack<PB, G> x = loadAt<Op::kL2Loads, G>(q.param + i);
#pragma unroll
    for (int e = 0; e < G; ++e) p[e] = P::load(x.v[e]);
  }
  if (Op::kReadsGrad) {
    Pack<PB, G> x = loadAt<Op::kL2Loads, G>(q.grad + i);
#pragma unroll
    for (int e = 0; e < G; ++e) g[e] = P::load(x.v[e]);
    if (scale != nullptr) {
      const float sc = *scale;
#pragma unroll
      for (int e = 0; e < G; ++e) {
        g[e] = g[e] / sc;
        x.v[e] = P::store(g[e]);
      }
      storePack<G>(q.grad + i, x);
    }
  }
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    if (q.state[k] != nullptr) {
      const Pack<SB, G> x = loadAt<Op::kL2Loads, G>(q.state[k] + i);
#pragma unroll
      for (int e = 0; e < G; ++e) s[k][e] = S::load(x.v[e]);
    }
  }
#pragma unroll
  for (int e = 0; e < G; ++e) {
    float st[3] = {s[0][e], s[1][e], s[2][e]};
    op(p[e], g[e], st);
#pragma unroll
    for (int k = 0; k < 3; ++k) s[k][e] = st[k];
  }
  if (Op::kWritesParam) {
    Pack<PB, G> x;
#pragma unroll
    for (int e = 0; e < G; ++e) x.v[e] = P::store(p[e]);
    storePack<G>(q.param + i, x);
    if (q.master != nullptr) {
      Pack<float, G> m;
#pragma unroll
      for (int e = 0; e < G; ++e) m.v[e] = p[e];
      storePack<G>(q.master + i, m);
    }
  }
  if (Op::kWritesState) {
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      if (q.state[k] != nullptr) {
        Pack<SB, G> x;
#pragma unroll
        for (int e = 0; e < G; ++e) x.v[e] = S::store(s[k][e]);
        storePack<G>(q.state[k] + i, x);
      }
    }
  }
}

// Every element of one segment, by the whole block: packs of G elements
// (one or two 16-byte accesses per slot) where aligned.
template <int G, typename P, typename S, typename Op>
__device__ void walkSegment(const SegmentPtrs<P, S>& q, uint32_t length, const float* scale,
                            Op& op) {
  uint32_t head = vectorHead<G, P, S, Op>(q);
  if (head > length) head = length;  // kNoVector too: all single elements
  for (uint32_t i = threadIdx.x; i < head; i += blockDim.x) elements<1>(q, i, scale, op);
  const uint32_t packs = (length - head) / G;
  for (uint32_t k = threadIdx.x; k < packs; k += blockDim.x) {
    elements<G>(q, head + k * G, scale, op);
  }
  for (uint32_t i = head + packs * G + threadIdx.x; i < length; i += blockDim.x) {
    elements<1>(q, i, scale, op);
  }
}

// The segments of plan block `block` through `op` (a copy per segment).
template <int G, typename P, typename S, typename Op>
__device__ void walkBlock(const DeviceTable& t, uint32_t block, const Op& op, const AmpArgs& amp) {
  for (uint32_t s = t.blockBegin[block]; s < t.blockBegin[block + 1]; ++s) {
    Op local = op;
    local.begin(t, s);
    const SegmentPtrs<P, S> q(t, t.segTensor[s], t.segOffset[s]);
    walkSegment<G>(q, t.segLength[s], amp.gradScale, local);
    local.end(t, s);
  }
}

// Block b = firstBlock + blockIdx.x (reverse: counted from the last block of
// the range) walks its segments.
template <int G, typename P, typename S, typename Op>
__global__ void __launch_bounds__(kThreads)
    listKernel(DeviceTable t, uint32_t firstBlock, uint32_t blocks, bool reverse, Op op,
               AmpArgs amp) {
  if (stepSkipped(amp)) return;
  walkBlock<G, P, S>(t, firstBlock + (reverse ? blocks - 1 - blockIdx.x : blockIdx.x), op, amp);
}

// Launches listKernel over blocks [firstBlock, firstBlock + blocks) with
// the list's pack size.
template <typename P, typename S, typename Op>
cudaError_t launchList(const DeviceTensorList::Impl& list, uint32_t firstBlock, uint32_t blocks,
                       bool reverse, const Op& op, const AmpArgs& amp, cudaStream_t stream) {
  if (blocks == 0) return cudaSuccess;
  if (list.packElems == 8) {
    listKernel<8, P, S, Op>
        <<<blocks, kThreads, 0, stream>>>(list.table, firstBlock, blocks, reverse, op, amp);
  } else {
    listKernel<4, P, S, Op>
        <<<blocks, kThreads, 0, stream>>>(list.table, firstBlock, blocks, reverse, op, amp);
  }
  return cudaGetLastError();
}

// Calls fn(P{}, S{}) with the device traits of the list's dtypes.
template <typename Fn>
cudaError_t dispatchList(ListTypes types, Fn&& fn) {
  auto withState = [&](auto p) -> cudaError_t {
    using P = decltype(p);
    if (types.state == DType::kFloat32) return fn(p, DevF32{});
    return fn(p, P{});
  };
  switch (types.param) {
    case DType::kFloat32:
      return withState(DevF32{});
    case DType::kFloat16:
      return withState(DevF16{});
    case DType::kBFloat16:
      return withState(DevBF16{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace bagua::kernels::optim
