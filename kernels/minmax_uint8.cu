// CUDA kernels of MinMaxUInt8 (minmax_uint8_cuda.h): compress and
// decompress. Grids are (blocks per chunk, chunks) for the
// per-chunk kernels, so the launch count does not depend on nChunks.
//
// compress = three launches on the stream: zero the two key words of each
// header; a segmented min/max (order keys, one atomicMax pair per block and
// chunk into its header); quantize, which reads the keys back. Keys make the
// atomics order-independent, so results equal the CPU loop's bit for bit.
//
// compress moves 2 reads + 1/sizeof(T) writes per element byte; the two
// passes are kept memory-bound for 16-bit dtypes too (8 elements per 16-byte
// load): the min/max forms the keys of two elements at a time with 16x2 SIMD
// min/max, and quantize encodes with FMUL/FADD/FMNMX (minmax::encodeFast)
// instead of FRND/F2I whenever the chunk allows, and walks the chunk back to
// front so that its first reads hit what the min/max left in L2.

#include "kernels/chunk_args.h"
#include "kernels/cuda_elements.cuh"
#include "kernels/minmax_uint8.h"
#include "kernels/minmax_uint8_cuda.h"

namespace bagua::kernels {
namespace {

using minmax::ChunkKind;

// How to decode one compressed chunk, from its header.
template <typename E>
struct GpuChunkDecoder {
  using Bits = typename E::Bits;
  ChunkKind kind;
  Bits minBits;
  minmax::Grid grid;

  __device__ explicit GpuChunkDecoder(const uint8_t* header) {
    minBits = *reinterpret_cast<const Bits*>(header);
    const float mn = E::toFloat(minBits);
    const float mx = E::toFloat(*reinterpret_cast<const Bits*>(header + sizeof(Bits)));
    kind = minmax::classify(mn, mx);
    grid = kind == ChunkKind::kRange ? minmax::makeGrid(mn, mx) : minmax::Grid{0, 0, 0};
  }

  __device__ Bits decode(uint8_t q) const {
    if (kind == ChunkKind::kNonFinite) return E::kNan;
    if (kind == ChunkKind::kConstant) return minBits;
    return E::fromFloat(minmax::saturate(minmax::decode(q, grid), E::kMaxFinite));
  }
};

__device__ __forceinline__ unsigned* keyWord(uint8_t* header, size_t offset) {
  return reinterpret_cast<unsigned*>(header + offset);
}

__global__ void zeroKeysKernel(uint8_t* dst, size_t stride, int nChunks) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= nChunks) return;
  *keyWord(dst + c * stride, minmax::kMinKeyOffset) = 0;
  *keyWord(dst + c * stride, minmax::kMaxKeyOffset) = 0;
}

__device__ __forceinline__ unsigned warpMax(unsigned v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Order keys of the two 16-bit elements of w, in its two halves: PRMT with
// selector 0xbb99 fills each half with its sign bit (0xffff for a negative
// element; __byte_perm would drop the sign-replicate bit of the selector),
// then one LOP3: negative -> ~bits, positive -> bits | 0x8000 (orderKey).
__device__ __forceinline__ unsigned orderKeys16x2(unsigned w) {
  unsigned sign;
  asm("prmt.b32 %0, %1, 0, 0xbb99;" : "=r"(sign) : "r"(w));
  return w ^ (sign | 0x80008000u);
}

// ~min key and max key of the elements of one thread.
struct KeyRange {
  unsigned notMinKey;  // ~min key, so both block folds are a max
  unsigned maxKey;
};

// Folds pack v into the running keys. 16-bit elements go two per 32-bit
// word through 16x2 SIMD min/max (VIMNMX.U16x2 on sm_90): 3 instructions per
// pair instead of ~10 per element, which kept the fp16 pass ALU-bound.
template <typename Bits, int G>
__device__ __forceinline__ void foldKeys(const Pack<Bits, G>& v, unsigned& lo, unsigned& hi) {
  if constexpr (sizeof(Bits) == 2 && G % 2 == 0) {
#pragma unroll
    for (int e = 0; e < G / 2; ++e) {
      const unsigned k = orderKeys16x2(v.v[2 * e] | static_cast<unsigned>(v.v[2 * e + 1]) << 16);
      lo = __vminu2(lo, k);
      hi = __vmaxu2(hi, k);
    }
  } else {
#pragma unroll
    for (int e = 0; e < G; ++e) {
      const unsigned k = minmax::orderKey<Bits>(v.v[e]);
      lo = min(lo, k);
      hi = max(hi, k);
    }
  }
}

// Keys of the packs p, p + step, ... of x, two loads in flight per iteration
// (a pure read stream: loads in flight are what sets its bandwidth). Past the
// end the second load repeats the first, which min/max ignores.
template <typename Bits, int G>
__device__ KeyRange threadKeyRange(const Bits* x, size_t packs, size_t p, size_t step) {
  constexpr bool kPaired = sizeof(Bits) == 2 && G % 2 == 0;
  unsigned lo = 0xffffffffu;  // min key(s): all ones is above any key
  unsigned hi = 0;
  for (; p < packs; p += 2 * step) {
    const size_t q = p + step < packs ? p + step : p;
    const Pack<Bits, G> a = loadPack<G>(x + p * G);
    const Pack<Bits, G> b = loadPack<G>(x + q * G);
    foldKeys<Bits, G>(a, lo, hi);
    foldKeys<Bits, G>(b, lo, hi);
  }
  if constexpr (kPaired) {
    // An idle thread keeps lo = 0xffff, the largest 16-bit key: neutral.
    lo = min(lo & 0xffffu, lo >> 16);
    hi = max(hi & 0xffffu, hi >> 16);
  }
  return KeyRange{~lo, hi};
}

// Segmented min/max: grid (blocks per chunk, chunks). Folds the block's keys
// into header words kMinKeyOffset (~min key) and kMaxKeyOffset (max key).
// Both compress passes are sized for kBlocksPerSm resident blocks per SM
// (residentBlocks): the launch bound keeps them within 32 registers.
template <typename E, int G>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    minMaxKernel(const typename E::Bits* src, size_t chunkElems, uint8_t* dst, size_t stride) {
  using Bits = typename E::Bits;
  const Bits* x = src + blockIdx.y * chunkElems;
  const KeyRange r = threadKeyRange<Bits, G>(
      x, chunkElems / G, blockIdx.x * size_t{kThreads} + threadIdx.x, size_t{gridDim.x} * kThreads);
  __shared__ unsigned partial[2][kThreads / 32];
  unsigned notMinKey = warpMax(r.notMinKey);
  unsigned maxKey = warpMax(r.maxKey);
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    partial[0][warp] = notMinKey;
    partial[1][warp] = maxKey;
  }
  __syncthreads();
  if (warp != 0) return;
  notMinKey = threadIdx.x < kThreads / 32 ? partial[0][threadIdx.x] : 0;
  maxKey = threadIdx.x < kThreads / 32 ? partial[1][threadIdx.x] : 0;
  notMinKey = warpMax(notMinKey);
  maxKey = warpMax(maxKey);
  if (threadIdx.x == 0) {
    uint8_t* header = dst + blockIdx.y * stride;
    atomicMax(keyWord(header, minmax::kMinKeyOffset), notMinKey);
    atomicMax(keyWord(header, minmax::kMaxKeyOffset), maxKey);
  }
}

// Codes of the packs of one chunk, last pack first: the min/max pass has just
// streamed the chunk front to back, so its tail is still in L2 (50 MB on
// H100/H200) and is read again first. encode(bits) -> code; order changes
// no byte.
template <typename E, int G, typename Encode>
__device__ __forceinline__ void quantizePacks(const typename E::Bits* x, uint8_t* codes,
                                              size_t packs, Encode encode) {
  using Bits = typename E::Bits;
  for (size_t i = blockIdx.x * size_t{kThreads} + threadIdx.x; i < packs;
       i += size_t{gridDim.x} * kThreads) {
    const size_t p = packs - 1 - i;
    const Pack<Bits, G> v = loadPack<G>(x + p * G);
    Pack<uint8_t, G> q;
#pragma unroll
    for (int e = 0; e < G; ++e) q.v[e] = encode(v.v[e]);
    storePack<G>(codes + p * G, q);
  }
}

// Quantize: grid (blocks per chunk, chunks). Block 0 of a chunk writes its
// min/max, the zeros up to the keys, and the padding after the codes.
template <typename E, int G>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    quantizeKernel(const typename E::Bits* src, size_t chunkElems, uint8_t* dst, size_t stride) {
  using Bits = typename E::Bits;
  const Bits* x = src + blockIdx.y * chunkElems;
  uint8_t* header = dst + blockIdx.y * stride;
  uint8_t* codes = header + minmax::kHeaderBytes;
  const Bits minBits = minmax::keyToBits<Bits>(~*keyWord(header, minmax::kMinKeyOffset));
  const Bits maxBits = minmax::keyToBits<Bits>(*keyWord(header, minmax::kMaxKeyOffset));
  const float mn = E::toFloat(minBits);
  const float mx = E::toFloat(maxBits);
  const bool finite = minmax::classify(mn, mx) != ChunkKind::kNonFinite;

  if (blockIdx.x == 0) {
    if (threadIdx.x < minmax::kMinKeyOffset) {
      const size_t b = threadIdx.x;
      const Bits word = b < sizeof(Bits) ? minBits : maxBits;
      uint8_t byte = 0;
      if (b < 2 * sizeof(Bits)) {
        // Little-endian bytes of min then max (NaN for a non-finite chunk).
        const Bits value = finite ? word : E::kNan;
        byte = static_cast<uint8_t>(value >> (8 * (b % sizeof(Bits))));
      }
      header[b] = byte;
    }
    const size_t padding = stride - minmax::kHeaderBytes - chunkElems;
    if (threadIdx.x < padding) codes[chunkElems + threadIdx.x] = 0;
  }

  const size_t packs = chunkElems / G;
  const minmax::Grid grid = minmax::makeGrid(mn, mx);
  if (!finite) {
    quantizePacks<E, G>(x, codes, packs, [](Bits) { return uint8_t{0}; });
  } else if (minmax::fastEncodable(mn, mx, grid)) {
    // Every gradient-like chunk: codes from FMUL/FADD/FMNMX only.
    const minmax::FastGrid fast = minmax::makeFastGrid(grid);
    quantizePacks<E, G>(x, codes, packs,
                        [fast](Bits b) { return minmax::encodeFast(E::toFloat(b), fast); });
  } else {
    // Values far from zero compared with their spread (|x * s| >= 2^22).
    quantizePacks<E, G>(x, codes, packs,
                        [grid](Bits b) { return minmax::encode(E::toFloat(b), grid); });
  }
}

template <typename E, int G>
__global__ void __launch_bounds__(kThreads)
    decompressKernel(const uint8_t* src, size_t stride, size_t chunkElems, typename E::Bits* dst) {
  using Bits = typename E::Bits;
  const uint8_t* header = src + blockIdx.y * stride;
  const GpuChunkDecoder<E> decoder(header);
  const uint8_t* codes = header + minmax::kHeaderBytes;
  Bits* y = dst + blockIdx.y * chunkElems;
  const size_t packs = chunkElems / G;
  for (size_t p = blockIdx.x * size_t{kThreads} + threadIdx.x; p < packs;
       p += size_t{gridDim.x} * kThreads) {
    const Pack<uint8_t, G> q = loadPack<G>(codes + p * G);
    Pack<Bits, G> v;
#pragma unroll
    for (int e = 0; e < G; ++e) v.v[e] = decoder.decode(q.v[e]);
    storePack<G>(y + p * G, v);
  }
}

template <typename E>
cudaError_t launchCompress(const void* src, size_t chunkElems, int nChunks, int target,
                           uint8_t* dst, cudaStream_t stream) {
  using Bits = typename E::Bits;
  const size_t stride = compressedChunkBytes(chunkElems);
  const Bits* x = static_cast<const Bits*>(src);
  int chunks = nChunks;
  if (target >= 0) {
    x += static_cast<size_t>(target) * chunkElems;
    chunks = 1;
  }
  if (chunkElems == 0) return cudaMemsetAsync(dst, 0, stride * chunks, stream);
  int resident = 0;
  cudaError_t err = residentBlocks(&resident);
  if (err != cudaSuccess) return err;
  constexpr int kG = kVec<E>;
  const bool vec = aligned16(x) && aligned16(dst) && (chunkElems * sizeof(Bits)) % 16 == 0;
  const size_t packs = vec ? chunkElems / kG : chunkElems;
  const dim3 grid(blocksFor(packs, (resident + chunks - 1) / chunks), chunks);

  zeroKeysKernel<<<(chunks + kThreads - 1) / kThreads, kThreads, 0, stream>>>(dst, stride, chunks);
  BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED();
  if (vec) {
    minMaxKernel<E, kG><<<grid, kThreads, 0, stream>>>(x, chunkElems, dst, stride);
    BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED();
    quantizeKernel<E, kG><<<grid, kThreads, 0, stream>>>(x, chunkElems, dst, stride);
  } else {
    minMaxKernel<E, 1><<<grid, kThreads, 0, stream>>>(x, chunkElems, dst, stride);
    BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED();
    quantizeKernel<E, 1><<<grid, kThreads, 0, stream>>>(x, chunkElems, dst, stride);
  }
  BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED();
  return cudaSuccess;
}

template <typename E>
cudaError_t launchDecompress(const uint8_t* src, size_t chunkElems, int nChunks, void* dst,
                             cudaStream_t stream) {
  using Bits = typename E::Bits;
  if (chunkElems == 0) return cudaSuccess;
  const size_t stride = compressedChunkBytes(chunkElems);
  int resident = 0;
  cudaError_t err = residentBlocks(&resident);
  if (err != cudaSuccess) return err;
  constexpr int kG = kVec<E>;
  Bits* y = static_cast<Bits*>(dst);
  const bool vec = aligned16(src) && aligned16(dst) && (chunkElems * sizeof(Bits)) % 16 == 0;
  const size_t packs = vec ? chunkElems / kG : chunkElems;
  const dim3 grid(blocksFor(packs, (resident + nChunks - 1) / nChunks), nChunks);
  if (vec) {
    decompressKernel<E, kG><<<grid, kThreads, 0, stream>>>(src, stride, chunkElems, y);
  } else {
    decompressKernel<E, 1><<<grid, kThreads, 0, stream>>>(src, stride, chunkElems, y);
  }
  BAGUA_KERNELS_RETURN_IF_LAUNCH_FAILED();
  return cudaSuccess;
}

}  // namespace

cudaError_t compress(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                     uint8_t* dst, cudaStream_t stream) {
  checkChunkArgs("compress", dtype, chunkElems, nChunks, target, false);
  checkAligned("compress", "src", src, dtypeSize(dtype));
  checkAligned("compress", "dst", dst, 4);  // atomics on the header keys
  return dispatchGpu(dtype, [&](auto e) {
    return launchCompress<decltype(e)>(src, chunkElems, nChunks, target, dst, stream);
  });
}

cudaError_t decompress(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks, void* dst,
                       cudaStream_t stream) {
  checkChunkArgs("decompress", dtype, chunkElems, nChunks, -1, false);
  checkAligned("decompress", "src", src, 4);
  checkAligned("decompress", "dst", dst, dtypeSize(dtype));
  return dispatchGpu(dtype, [&](auto e) {
    return launchDecompress<decltype(e)>(src, chunkElems, nChunks, dst, stream);
  });
}

}  // namespace bagua::kernels
