// A Communicator that forwards every operation to another one and counts the
// bytes this rank sends, so an algorithm's traffic per step can be reported
// (DiLoCo's and local SGD's bytes per step; the benchmark's comparison of
// every algorithm). Bindings hand this wrapper to the algorithms; the
// wrapped communicator stays reachable (inner()) for what needs its type
// (the NCCL stream).
//
// The count is what the standard algorithm of each collective sends per
// rank (nccl-tests' bus-bandwidth factors; ring allreduce, ring allgather,
// direct alltoall), from the arguments, not measured on the wire:
//   allreduce        2 (n-1)/n x count x element size
//   reduce           (n-1)/n x count x element size
//   reduceScatter    (n-1) x countPerRank x element size
//   allgather        (n-1) x bytesPerRank
//   alltoall         (n-1) x bytesPerRank
//   alltoallv        the bytes addressed to other ranks
//   broadcast        bytes on the root, (n-2)/(n-1) x bytes elsewhere (ring)
//   gather, scatter  bytesPerRank from a non-root / (n-1) x bytesPerRank from the root
//   send             bytes;  recv, barrier: 0
// One rank: 0 for every collective. NCCL may pick a tree or another
// protocol with slightly different per-rank bytes; protocol headers are not
// counted.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/comm/communicator.h"

namespace bagua {

class CountingCommunicator final : public Communicator {
 public:
  explicit CountingCommunicator(std::shared_ptr<Communicator> inner);

  // Bytes this rank sent (by the formulas above) since construction.
  uint64_t bytesSent() const { return sent_.load(std::memory_order_relaxed); }
  Communicator& inner() { return *inner_; }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Device device() const override { return inner_->device(); }
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
  std::shared_ptr<Work> barrier() override { return inner_->barrier(); }
  void waitFor(std::shared_ptr<Work> work) override { inner_->waitFor(std::move(work)); }

 private:
  // Adds bytes x factor (nothing with one rank) once the operation was enqueued.
  void count(double bytes, double factor);

  std::shared_ptr<Communicator> inner_;
  std::atomic<uint64_t> sent_{0};
};

}  // namespace bagua
