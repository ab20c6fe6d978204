// The fused optimizers on the GPU: one launch updates every tensor of a list
// (LAMB: three, or one persistent kernel: LambLayout), whatever the tensors' sizes. The list
// (addresses of every slot, the segment plan, LAMB's work space) is uploaded
// once into device memory by DeviceTensorList and reused every step until the
// set of tensors changes; a step passes only its scalars. Same arguments,
// slots and formulas as the CPU reference (optim_cpu.h); SGD, Adam and
// Adagrad give its bits, LAMB agrees to a few fp32 roundings (its norms are
// summed in another order). Errors: bad lists throw std::invalid_argument;
// the step functions return the cudaError_t of a failed launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/optim/optim_types.h"

namespace bagua::kernels::optim {

constexpr size_t kDefaultChunkElems = 8192;

// How LAMB runs a list. One batch (batchElems 0): three launches a step over
// the whole list (pass 1, trust ratios, pass 2). Several: one persistent
// kernel in which pass 2 follows pass 1 batch by batch, on the data pass 1
// left in L2 (lamb_schedule.h). Measured on one H100, 1B set, three launches
// per batch instead: 16.1 ms at 8M-element batches against 14.3 ms for one
// batch (bench/results/fused_generic_pieces_gpu_2026-11-28).
struct LambLayout {
  size_t batchElems = 0;
  // Pass-1 blocks of the next batch handed out before a batch's pass 2; 0:
  // as many as the kernel has blocks.
  uint32_t lookahead = 0;
  // Resident blocks per SM of the persistent kernel; 0: as many as fit.
  uint32_t blocksPerSm = 0;
};
// Elements per vector access of a thread: 4 (one 16-byte access per fp32
// slot) or 8 (two; one for 16-bit parameters); 0 picks 4 for float32
// parameters and 8 for 16-bit ones.
constexpr int kAutoPack = 0;

// The device-resident table of a tensor list. Built on the current device;
// the steps must run there. A list is used by one stream at a time (LAMB's
// norms and its queue live in it). Not copyable.
class DeviceTensorList {
 public:
  // Checks the list (checkList) and uploads it (synchronously). Throws
  // std::invalid_argument for a bad list or packElems other than 0, 4, 8,
  // std::runtime_error for CUDA errors.
  DeviceTensorList(const std::vector<TensorRef>& tensors, ListTypes types,
                   size_t chunkElems = kDefaultChunkElems, LambLayout lamb = {},
                   int packElems = kAutoPack);
  ~DeviceTensorList();
  DeviceTensorList(const DeviceTensorList&) = delete;
  DeviceTensorList& operator=(const DeviceTensorList&) = delete;

  size_t size() const;
  size_t numel() const;
  ListTypes types() const;
  unsigned slotMask() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

cudaError_t sgdStep(const DeviceTensorList& list, const SgdArgs& args, const AmpArgs& amp,
                    cudaStream_t stream);
cudaError_t adamStep(const DeviceTensorList& list, const AdamArgs& args, const AmpArgs& amp,
                     cudaStream_t stream);
cudaError_t adagradStep(const DeviceTensorList& list, const AdagradArgs& args, const AmpArgs& amp,
                        cudaStream_t stream);
cudaError_t lambStep(const DeviceTensorList& list, const LambArgs& args, const AmpArgs& amp,
                     cudaStream_t stream);

}  // namespace bagua::kernels::optim
