// CUDA kernels of MinMaxUInt8 and the chunk steps around it. Semantics,
// formula and layout: minmax_uint8.h; results equal the CPU reference there
// bit for bit (tests/kernels/minmax_uint8_cuda_test.cc checks this).
//
// Every function enqueues on `stream` and returns at once; pointers are device
// (or managed) memory of the current device. Launches per call, whatever
// nChunks is: compress 3 (zero the header keys, fused segmented min/max with
// one atomic per block and chunk, quantize), every other function 1.
//
// Errors: bad arguments (as in minmax_uint8.h, plus compressed buffers not
// 4-byte aligned) throw std::invalid_argument before anything is enqueued;
// a failed launch returns its cudaError_t (checked with cudaGetLastError after
// every launch), cudaSuccess otherwise. Errors of the kernels' execution show
// up, as usual, at the next synchronizing call.
//
// Speed: the 16-byte vector path is taken when the element buffers, the
// compressed buffer and chunkElems * sizeof(dtype) are multiples of 16 bytes;
// otherwise an element-at-a-time path with the same results. compress uses
// a faster encoding with the same codes for chunks with max |x| * 255 /
// (max - min + eps) < 2^22 (all but near-constant chunks), Bagua's
// formula literally otherwise.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace bagua::kernels {

// compressCpu on the GPU: target < 0 all chunks, else chunk `target` of src
// into one compressed chunk at dst.
cudaError_t compress(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                     uint8_t* dst, cudaStream_t stream);

// decompressCpu on the GPU.
cudaError_t decompress(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks, void* dst,
                       cudaStream_t stream);

// reduceChunksCpu on the GPU (in place).
cudaError_t reduceChunks(DType dtype, void* data, size_t chunkElems, int nChunks, int target,
                         bool average, cudaStream_t stream);

// scaleCpu on the GPU.
cudaError_t scale(DType dtype, void* data, size_t n, float factor, cudaStream_t stream);

// addScaledCpu on the GPU (out may alias a or b).
cudaError_t addScaled(DType dtype, void* out, const void* a, const void* b, size_t n, float alpha,
                      cudaStream_t stream);

// residualCpu on the GPU (out may alias a or b).
cudaError_t residual(DType dtype, void* out, const void* a, const void* b, size_t n,
                     cudaStream_t stream);

}  // namespace bagua::kernels
