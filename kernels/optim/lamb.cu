// LAMB on the GPU (optim_cuda.h). Pass 1 updates the moments and sums |p|^2
// and |u|^2 per segment; each tensor's trust ratio is its segments' sums
// added in double in a fixed order (the same bits every run) by one block;
// pass 2 applies the update recomputed from the moments. One batch: three
// launches. Several (LambLayout): one persistent kernel whose blocks take
// items in lamb_schedule.h's order; the block that finishes a batch's last
// pass-1 item computes the batch's trust ratios and marks the batch ready
// for the step, and pass-2 items wait for that mark.
#include <cuda/atomic>

#include <stdexcept>
#include <string>

#include "kernels/optim/lamb_schedule.h"
#include "kernels/optim/multi_tensor.cuh"
#include "kernels/optim/optim_math.h"

namespace bagua::kernels::optim {
namespace {

constexpr int kWarps = kThreads / 32;

// Sum of v over the block; thread 0 gets the total. Every thread calls it.
__device__ float blockSum(float v) {
  __shared__ float warpSums[kWarps];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) warpSums[warp] = v;
  __syncthreads();
  float total = 0.0f;
  if (threadIdx.x == 0) {
    for (int w = 0; w < kWarps; ++w) total += warpSums[w];
  }
  __syncthreads();  // warpSums is reused by the next call
  return total;
}

// L2: loads from L2 only (the persistent kernel reads what other blocks wrote).
template <bool L2>
struct MomentsOp {
  static constexpr bool kReadsGrad = true;
  static constexpr bool kWritesParam = false;
  static constexpr bool kWritesState = true;
  static constexpr bool kL2Loads = L2;
  LambScalars s;
  float paramSq = 0.0f;
  float updateSq = 0.0f;
  __device__ void begin(const DeviceTable&, uint32_t) {}
  __device__ void operator()(float& p, float g, float (&st)[3]) {
    const float u = lambUpdate(p, g, st[0], st[1], s);
    paramSq += p * p;
    updateSq += u * u;
  }
  __device__ void end(const DeviceTable& t, uint32_t segment) {
    const float ps = blockSum(paramSq);
    const float us = blockSum(updateSq);
    if (threadIdx.x == 0) {
      t.partial[2 * segment] = ps;
      t.partial[2 * segment + 1] = us;
    }
  }
};

template <bool L2>
struct ApplyOp {
  static constexpr bool kReadsGrad = false;
  static constexpr bool kWritesParam = true;
  static constexpr bool kWritesState = false;
  static constexpr bool kL2Loads = L2;
  LambScalars s;
  float negRate = 0.0f;
  __device__ void begin(const DeviceTable& t, uint32_t segment) {
    negRate = s.negLr * __ldcg(&t.trust[t.segTensor[segment]]);
  }
  __device__ void operator()(float& p, float, float (&st)[3]) {
    p = p + negRate * lambRecompute(p, st[0], st[1], s);
  }
  __device__ void end(const DeviceTable&, uint32_t) {}
};

// Sum of v over the block in double, in a fixed order whatever the data
// (so the trust ratio has the same bits every run); thread 0 gets it.
__device__ double blockSumDouble(double v) {
  __shared__ double warpSums[kWarps];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) warpSums[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0.0;
  if (threadIdx.x == 0) {
    for (int w = 0; w < kWarps; ++w) total += warpSums[w];
  }
  __syncthreads();
  return total;
}

// A tensor's trust ratio from its segments' sums, by the whole block
// (strided, then blockSumDouble). Every thread calls it.
__device__ void blockTrust(const DeviceTable& t, uint32_t tensor, float maxTrust) {
  double ps = 0.0;
  double us = 0.0;
  for (uint32_t s = t.tensorBegin[tensor] + threadIdx.x; s < t.tensorBegin[tensor + 1];
       s += blockDim.x) {
    ps += __ldcg(&t.partial[2 * s]);
    us += __ldcg(&t.partial[2 * s + 1]);
  }
  ps = blockSumDouble(ps);
  us = blockSumDouble(us);
  if (threadIdx.x == 0) {
    t.trust[tensor] = lambTrust(static_cast<float>(ps), static_cast<float>(us), maxTrust);
  }
}

// One block per tensor. (One thread per tensor, on the H100's 1B set in
// 1024-element chunks and 4M-element batches: 79.9 ms a step, against 20.4
// ms with a block.)
__global__ void __launch_bounds__(kThreads)
    trustKernel(DeviceTable t, uint32_t firstTensor, float maxTrust, AmpArgs amp) {
  if (stepSkipped(amp)) return;
  blockTrust(t, firstTensor + blockIdx.x, maxTrust);
}

// The trust ratios of a batch of many tensors, a warp per tensor (lanes
// strided over its segments, then a shuffle tree: the same bits every run).
__device__ void warpsTrust(const DeviceTable& t, const Batch& b, float maxTrust) {
  const uint32_t lane = threadIdx.x % 32;
  for (uint32_t tensor = b.firstTensor + threadIdx.x / 32; tensor < b.firstTensor + b.tensors;
       tensor += kWarps) {
    double ps = 0.0;
    double us = 0.0;
    for (uint32_t s = t.tensorBegin[tensor] + lane; s < t.tensorBegin[tensor + 1]; s += 32) {
      ps += __ldcg(&t.partial[2 * s]);
      us += __ldcg(&t.partial[2 * s + 1]);
    }
    for (int o = 16; o > 0; o /= 2) {
      ps += __shfl_down_sync(0xffffffffu, ps, o);
      us += __shfl_down_sync(0xffffffffu, us, o);
    }
    if (lane == 0) {
      t.trust[tensor] = lambTrust(static_cast<float>(ps), static_cast<float>(us), maxTrust);
    }
  }
}

using DeviceAtomic = cuda::atomic_ref<uint32_t, cuda::thread_scope_device>;

// Pass 1 of one block; the block that finishes its batch's last one writes
// the batch's trust ratios and marks it ready for `step`.
template <int G, typename P, typename S>
__device__ void firstPassItem(const DeviceTable& t, const LambQueue& q, const LambScalars& sc,
                              const AmpArgs& amp, uint32_t block, uint32_t batch, uint32_t step) {
  __shared__ bool lastOfBatch;
  MomentsOp<true> moments;
  moments.s = sc;
  walkBlock<G, P, S>(t, block, moments, amp);  // ends with a barrier (blockSum)
  if (threadIdx.x == 0) {
    __threadfence();  // the block's moments and sums before its count
    lastOfBatch = DeviceAtomic(q.firstPassDone[batch]).fetch_add(1, cuda::memory_order_acq_rel) ==
                  q.batches[batch].blocks - 1;
  }
  __syncthreads();
  if (!lastOfBatch) return;
  const Batch b = q.batches[batch];
  if (b.tensors < kWarps) {
    for (uint32_t tensor = b.firstTensor; tensor < b.firstTensor + b.tensors; ++tensor) {
      blockTrust(t, tensor, sc.maxTrust);
    }
  } else {
    warpsTrust(t, b, sc.maxTrust);
  }
  __syncthreads();  // every warp's ratios before the mark
  if (threadIdx.x == 0) {
    q.firstPassDone[batch] = 0;  // for the next step (no one else counts this batch now)
    __threadfence();
    DeviceAtomic(q.ready[batch]).store(step, cuda::memory_order_release);
  }
}

// Pass 2 of one block, once its batch is ready for `step`.
template <int G, typename P, typename S>
__device__ void secondPassItem(const DeviceTable& t, const LambQueue& q, const LambScalars& sc,
                               const AmpArgs& amp, uint32_t block, uint32_t batch, uint32_t step) {
  if (threadIdx.x == 0) {
    const DeviceAtomic ready(q.ready[batch]);
    while (ready.load(cuda::memory_order_acquire) != step) __nanosleep(64);
    __threadfence();
  }
  __syncthreads();
  ApplyOp<true> apply;
  apply.s = sc;
  walkBlock<G, P, S>(t, block, apply, amp);
}

// The persistent kernel: each block takes the next item (fetched while it
// works on the one before) until none is left; the last block out resets
// the queue and records the step.
template <int G, typename P, typename S>
__global__ void __launch_bounds__(kThreads)
    queueKernel(DeviceTable t, LambQueue q, LambScalars sc, AmpArgs amp) {
  if (stepSkipped(amp)) return;
  __shared__ uint32_t next;
  const uint32_t step = __ldcg(&q.counters[2]) + 1;  // no block writes it before all have read it
  const DeviceAtomic work(q.counters[0]);
  if (threadIdx.x == 0) next = work.fetch_add(1, cuda::memory_order_relaxed);
  __syncthreads();
  for (uint32_t k = next; k < q.itemCount; k = next) {
    __syncthreads();  // every thread has read `next`
    if (threadIdx.x == 0) next = work.fetch_add(1, cuda::memory_order_relaxed);
    const uint32_t item = q.items[k];
    const uint32_t block = item & ~kSecondPass;
    const uint32_t batch = q.blockBatch[block];
    if ((item & kSecondPass) == 0) {
      firstPassItem<G, P, S>(t, q, sc, amp, block, batch, step);
    } else {
      secondPassItem<G, P, S>(t, q, sc, amp, block, batch, step);
    }
    __syncthreads();  // `next` is written
  }
  if (threadIdx.x == 0 &&
      DeviceAtomic(q.counters[1]).fetch_add(1, cuda::memory_order_acq_rel) == gridDim.x - 1) {
    q.counters[0] = 0;
    q.counters[1] = 0;
    q.counters[2] = step;
  }
}

// Calls fn(kernel) with the persistent kernel of the list's dtypes and pack.
template <typename Fn>
cudaError_t withQueueKernel(const DeviceTensorList::Impl& im, Fn&& fn) {
  return dispatchList(im.types, [&](auto p, auto s) -> cudaError_t {
    using P = decltype(p);
    using S = decltype(s);
    return im.packElems == 8 ? fn(queueKernel<8, P, S>) : fn(queueKernel<4, P, S>);
  });
}

}  // namespace

uint32_t lambQueueGrid(const DeviceTensorList::Impl& im, uint32_t blocksPerSm) {
  int device = 0, sms = 0, fit = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) {
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  }
  if (err == cudaSuccess) {
    err = withQueueKernel(im, [&](auto kernel) {
      return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, kThreads, 0);
    });
  }
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("DeviceTensorList: LAMB's occupancy: ") +
                             cudaGetErrorString(err));
  }
  uint32_t perSm = static_cast<uint32_t>(fit > 0 ? fit : 1);
  if (blocksPerSm > 0 && blocksPerSm < perSm) perSm = blocksPerSm;
  return perSm * static_cast<uint32_t>(sms);
}

cudaError_t lambStep(const DeviceTensorList& list, const LambArgs& args, const AmpArgs& amp,
                     cudaStream_t stream) {
  checkSlots("lamb", list.slotMask(), lambRule());
  const auto& im = list.impl();
  const LambScalars sc = lambScalars(args);
  if (im.queue.items != nullptr) {
    return withQueueKernel(im, [&](auto kernel) {
      kernel<<<im.lambGrid, kThreads, 0, stream>>>(im.table, im.queue, sc, amp);
      return cudaGetLastError();
    });
  }
  MomentsOp<false> moments;
  moments.s = sc;
  ApplyOp<false> apply;
  apply.s = sc;
  return dispatchList(im.types, [&](auto p, auto s) -> cudaError_t {
    using P = decltype(p);
    using S = decltype(s);
    for (const Batch& b : im.batches) {
      cudaError_t err = launchList<P, S>(im, b.firstBlock, b.blocks, false, moments, amp, stream);
      if (err != cudaSuccess) return err;
      trustKernel<<<b.tensors, kThreads, 0, stream>>>(im.table, b.firstTensor, sc.maxTrust, amp);
      err = cudaGetLastError();
      if (err != cudaSuccess) return err;
      err = launchList<P, S>(im, b.firstBlock, b.blocks, true, apply, amp, stream);
      if (err != cudaSuccess) return err;
    }
    return cudaSuccess;
  });
}

}  // namespace bagua::kernels::optim
