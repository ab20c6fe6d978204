// CUDA kernels of MinMaxUInt4 (minmax_uint4.h): same results as the CPU
// reference there, bit for bit (tests/kernels/minmax_uint4_cuda_test.cc).
// One launch per call; one thread block of 256 threads per 512-element
// quantization block (each thread two elements, i.e. one code byte).
//
// Every function enqueues on `stream` and returns at once; pointers are
// device (or managed) memory of the current device; compressed buffers must
// be 4-byte aligned. Bad arguments throw std::invalid_argument before
// anything is enqueued; a failed launch returns its cudaError_t.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace bagua::kernels {

// compress4Cpu on the GPU.
cudaError_t compress4(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                      uint8_t* dst, cudaStream_t stream);

// decompress4Cpu on the GPU.
cudaError_t decompress4(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks, void* dst,
                        cudaStream_t stream);

}  // namespace bagua::kernels
