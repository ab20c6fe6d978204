// Communicator over Gloo (Debian's libgloo, TCP transport) for CPU buffers.
//
// Operations run on one worker thread (OrderedWorker), in enqueue order, so
// the caller never blocks on the network; enqueue() runs CPU compute in the
// same order (ByteGrad's quantize steps between its collectives). Gloo reports a dead
// peer or a timeout by throwing; the failing operation's Work carries it as a
// CommError (TimeoutError for timeouts), and every later operation fails too.
//
// The collectives are Gloo's options-based algorithms (allreduce, reduce,
// allgather, gather, scatter, alltoall, alltoallv, broadcast, barrier) with
// the typed reductions of kernels/cpu_reduce.h; Gloo 0.5 has no options-based
// reduce-scatter, so reduceScatter allreduces a copy and keeps its chunk.
// Setup, the worker and point to point: gloo_communicator.cc; the
// collectives: gloo_collectives.cc.
#pragma once

#include <cstdint>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/cpu_communicator.h"
#include "runtime/comm/ordered_worker.h"
#include "runtime/store/store.h"

namespace gloo {
class Context;
}

namespace bagua {

class GlooCommunicator final : public CpuCommunicator {
 public:
  struct Options {
    // Network interface to use (GLOO_SOCKET_IFNAME when empty; then the
    // address of this host's name).
    std::string iface;
    // Per-operation timeout; a peer that never answers fails the op.
    std::chrono::milliseconds timeout{std::chrono::seconds(60)};
    // Key prefix in the store, so several communicators can share one.
    std::string prefix = "gloo";
  };

  // Connects rank `rank` of `size` through `store`; every rank must call it.
  // Sets SIGPIPE to ignored if it still has its default action, so that a
  // dead peer is a CommError rather than a killed process.
  GlooCommunicator(Store& store, int rank, int size, Options options);
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

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

  std::shared_ptr<Work> enqueue(std::string what, std::function<void()> fn) override;

 private:
  // The Gloo algorithms themselves, on the worker thread (enqueued work).
  void allreduceNow(void* data, size_t count, DType dtype, ReduceOp op);
  void reduceNow(const void* in, void* out, size_t count, DType dtype, ReduceOp op, int root);

  int rank_;
  int size_;
  Options options_;
  std::shared_ptr<gloo::Context> context_;
  std::vector<uint64_t> sendSeq_;  // per peer, enqueue-time counters
  std::vector<uint64_t> recvSeq_;
  std::unique_ptr<OrderedWorker> worker_;  // last: stopped first
};

}  // namespace bagua
