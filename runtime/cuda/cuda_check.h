// CUDA_CHECK / NCCL_CHECK: turn status codes into CudaError / CommError with
// the call, its error string and file:line. NCCL is runtime/nccl/nccl_api.h
// (bound at run time to the process's NCCL).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "runtime/common/error.h"
#include "runtime/nccl/nccl_api.h"

#define BAGUA_CUDA_CHECK(call)                                                               \
  do {                                                                                       \
    cudaError_t bagua_cuda_status = (call);                                                  \
    if (bagua_cuda_status != cudaSuccess) {                                                  \
      BAGUA_THROW(CudaError,                                                                 \
                  std::string(#call) + " failed: " + cudaGetErrorString(bagua_cuda_status)); \
    }                                                                                        \
  } while (false)

#define BAGUA_NCCL_CHECK(call)                                                               \
  do {                                                                                       \
    ncclResult_t bagua_nccl_status = (call);                                                 \
    if (bagua_nccl_status != ncclSuccess && bagua_nccl_status != ncclInProgress) {           \
      BAGUA_THROW(CommError,                                                                 \
                  std::string(#call) + " failed: " + ncclGetErrorString(bagua_nccl_status)); \
    }                                                                                        \
  } while (false)
