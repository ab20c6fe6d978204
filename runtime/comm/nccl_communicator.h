// Communicator over NCCL for CUDA buffers, on its own high-priority stream
// (a background one: lowest priority, few channels; Options::background).
//
// Rank 0 creates the NCCL unique id and publishes it in the store; every
// rank meets the others at a store barrier (NCCL's init has no deadline: a
// rank that never comes fails the others with a TimeoutError naming it) and
// joins with ncclCommInitRank on its device. A rank that dies after the
// barrier and before NCCL's init finishes is not caught (a narrow window).
// Operations are enqueued on the communicator's stream and return an
// event-backed Work, so the host never blocks per operation. A Work that does
// not complete within the timeout aborts the communicator (ncclCommAbort)
// and fails with a TimeoutError naming the operation; NCCL's asynchronous
// errors (a dead peer) surface the same way as CommError.
//
// ncclAvg is not used on a one-rank communicator (NCCL 2.27.5-2.29.6 give
// wrong one-rank averages, NVIDIA/nccl#1950): there it is a sum, which for
// one rank is the average. On integer dtypes ncclAvg divides the summed value
// by the rank count truncating toward zero (FuncSumPostDiv in NCCL's
// src/device/reduce_kernel.h), which is the CPU path's rule, so it is used
// as is.
//
// NCCL has no bitwise reductions: band/bor/bxor collect every rank's slice
// into stream-ordered scratch memory (allreduce: allgather; reduce: gather to
// the root; reduceScatter: alltoall) and reduce the slices with
// kernels::reduceSlices. gather, scatter and alltoallv are grouped
// ncclSend/ncclRecv, the rank's own block copied on the stream.
// Teardown: NCCL's ncclCommDestroy communicates with the communicator's
// other ranks on the same host (NCCL 2.23+: an unordered destroy can hang,
// pytorch/pytorch#137507), and a Python process that exits leaves its
// communicators to the garbage collector, whose order differs between ranks
// (4 ranks on 4 GPUs of one host hung at exit, issue 26). shutdownAll()
// destroys every live communicator of the process in the reverse of their
// creation order, which ranks share; bagua's Python side calls it at exit.
// Setup, Work and point to point: nccl_communicator.cc; the collectives:
// nccl_collectives.cc.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <shared_mutex>
#include <string>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/nccl/nccl_api.h"
#include "runtime/store/store.h"

namespace bagua {

class NcclCommunicator final : public Communicator {
 public:
  struct Options {
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
    std::string prefix = "nccl";  // store key prefix for the unique id
    // For exchanges that run beside training for many steps (DiLoCo's
    // outer gradients over a slow link): NCCL's kernel keeps a thread block
    // per channel resident, polling, for as long as the link takes, and
    // those SMs are taken from the training kernels. A background
    // communicator holds few: one channel per network peer
    // (ncclConfig_t.nChannelsPerNetPeer, NCCL >= 2.28), allgather as
    // point-to-point sends (so Bagua-Net's tuner, which gives collectives
    // up to 16 channels, does not apply), and the lowest stream priority.
    bool background = false;
  };

  // Joins rank `rank` of `size` on CUDA device `device`; every rank calls it.
  NcclCommunicator(Store& store, int rank, int size, int device, Options options);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::kCuda; }
  int cudaDevice() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  bool background() const { return options_.background; }

  std::shared_ptr<Work> allreduce(void* data, size_t count, DType dtype, ReduceOp op) override;
  std::shared_ptr<Work> reduce(const void* in, void* out, size_t count, DType dtype, ReduceOp op,
                               int root) override;
  std::shared_ptr<Work> reduceScatter(const void* in, void* out, size_t countPerRank, DType dtype,
                                      ReduceOp op) override;
  std::shared_ptr<Work> allgather(const void* in, void* out, size_t bytesPerRank) override;
  std::shared_ptr<Work> gather(const void* in, void* out, size_t bytesPerRank, int root) override;
  std::shared_ptr<Work> scatter(const void* in, void* out, size_t bytesPerRank, int root) override;
  std::shared_ptr<Work> alltoall(const void* in, void* out, size_t bytesPerRank) override;
  std::shared_ptr<Work> alltoallv(const void* in, const std::vector<size_t>& sendBytes,
                                  const std::vector<size_t>& sendOffsets, void* out,
                                  const std::vector<size_t>& recvBytes,
                                  const std::vector<size_t>& recvOffsets) override;
  std::shared_ptr<Work> broadcast(void* data, size_t bytes, int root) override;
  std::shared_ptr<Work> send(const void* data, size_t bytes, int peer) override;
  std::shared_ptr<Work> recv(void* data, size_t bytes, int peer) override;
  std::shared_ptr<Work> barrier() override;
  void waitFor(std::shared_ptr<Work> work) override;

  // Makes the communicator's stream wait for `event` (recorded by the
  // caller's compute stream when its tensors are ready). Never blocks.
  void waitEvent(cudaEvent_t event);
  // A Work that finishes once everything enqueued so far has.
  std::shared_ptr<Work> fence(std::string what);
  // Aborts the communicator (after a timeout); later operations fail.
  void abort(const std::string& why);
  // NCCL's asynchronous error of the communicator into *result (and its last
  // error message into *detail), under the lock abort() and shutdown() free
  // it under; false once it was aborted or shut down (nothing to ask).
  bool asyncError(ncclResult_t* result, std::string* detail);
  // Destroys the NCCL communicator now (after its stream drains); later
  // operations fail. Every rank of it must call this (or shutdownAll).
  void shutdown();
  // shutdown() of every live NcclCommunicator of this process, newest first.
  static void shutdownAll();

 private:
  std::shared_ptr<Work> record(std::string what);
  void checkUsable(const char* op) const;
  // How a bitwise reduction collects the size() slices it reduces.
  enum class Collect { kAllgather, kGatherToRoot, kAlltoall };

  // Stream steps without a Work, shared by the collectives.
  void enqueueGather(const void* in, void* out, size_t bytesPerRank, int root);
  void enqueueAlltoall(const void* in, void* out, size_t bytesPerRank);
  void enqueueAllgatherP2p(const void* in, void* out, size_t bytesPerRank);
  // Collects `count` elements from every rank (`how`) into scratch memory
  // and reduces the slices with the bitwise `op` into `out` (the root's
  // only, for kGatherToRoot).
  void enqueueBitwise(Collect how, const void* in, void* out, size_t count, DType dtype,
                      ReduceOp op, int root);

  int rank_;
  int size_;
  int device_;
  Options options_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* scratch_ = nullptr;  // one float for barrier()
  std::shared_mutex commMutex_;  // comm_'s lifetime: asyncError() against abort()/shutdown()
  std::atomic<bool> aborted_{false};
  std::atomic<bool> shut_down_{false};
};

}  // namespace bagua
