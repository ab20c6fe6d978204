// The collective interface every algorithm talks to. Two implementations:
// GlooCommunicator (CPU buffers, Gloo's TCP transport) and NcclCommunicator
// (CUDA buffers, on its own stream). Operations are enqueued and run in
// enqueue order; each returns a Work. Reductions take an element count, a
// DType and a ReduceOp; pure data movement takes byte counts. Buffers must
// stay valid until the operation's Work is done.
//
// Every rank calls every collective in the same order with matching sizes
// (and the same root). Reductions take every DType and ReduceOp except a
// bitwise op on a float dtype; kAvg on an integer dtype is the (wrapping) sum
// divided by size(), truncated toward zero (kernels/cpu_reduce.h). Bad
// arguments (root or peer out of range, bitwise op on a float dtype,
// alltoallv vectors of the wrong length) throw InvalidArgument before
// anything is enqueued. Zero-size operations complete without traffic.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/comm/types.h"
#include "runtime/comm/work.h"

namespace bagua {

class Communicator {
 public:
  virtual ~Communicator() = default;

  // This process's rank in the communicator.
  virtual int rank() const = 0;
  // Number of ranks.
  virtual int size() const = 0;
  // Where the buffers of this communicator live.
  virtual Device device() const = 0;

  // In place: every rank ends with the reduction of all ranks' `data`.
  virtual std::shared_ptr<Work> allreduce(void* data, size_t count, DType dtype, ReduceOp op) = 0;
  // The reduction of all ranks' `in` lands in root's `out` (may equal `in`);
  // other ranks' buffers are not written (their `out` may be null).
  virtual std::shared_ptr<Work> reduce(const void* in, void* out, size_t count, DType dtype,
                                       ReduceOp op, int root) = 0;
  // `in` holds size() chunks of `countPerRank` elements; chunk r of the
  // reduction lands in rank r's `out`.
  virtual std::shared_ptr<Work> reduceScatter(const void* in, void* out, size_t countPerRank,
                                              DType dtype, ReduceOp op) = 0;
  // `out` receives size() blocks of `bytesPerRank`, block r from rank r.
  virtual std::shared_ptr<Work> allgather(const void* in, void* out, size_t bytesPerRank) = 0;
  // Root's `out` receives size() blocks of `bytesPerRank`, block r from rank
  // r (other ranks' `out` may be null).
  virtual std::shared_ptr<Work> gather(const void* in, void* out, size_t bytesPerRank,
                                       int root) = 0;
  // Block r of root's `in` (size() blocks of `bytesPerRank`) lands in rank
  // r's `out` (other ranks' `in` may be null).
  virtual std::shared_ptr<Work> scatter(const void* in, void* out, size_t bytesPerRank,
                                        int root) = 0;
  // Block j of `in` goes to rank j; block j of `out` comes from rank j.
  virtual std::shared_ptr<Work> alltoall(const void* in, void* out, size_t bytesPerRank) = 0;
  // alltoall with per-peer sizes: sendBytes[j] bytes at in + sendOffsets[j]
  // go to rank j; recvBytes[j] bytes from rank j land at out + recvOffsets[j]
  // (size() entries each; recvBytes[j] equals rank j's sendBytes[rank()]).
  virtual std::shared_ptr<Work> alltoallv(const void* in, const std::vector<size_t>& sendBytes,
                                          const std::vector<size_t>& sendOffsets, void* out,
                                          const std::vector<size_t>& recvBytes,
                                          const std::vector<size_t>& recvOffsets) = 0;
  // Rank `root`'s `data` is copied to every rank.
  virtual std::shared_ptr<Work> broadcast(void* data, size_t bytes, int root) = 0;
  // Point to point; matched in order per peer.
  virtual std::shared_ptr<Work> send(const void* data, size_t bytes, int peer) = 0;
  virtual std::shared_ptr<Work> recv(void* data, size_t bytes, int peer) = 0;
  // Completes once every rank has entered it.
  virtual std::shared_ptr<Work> barrier() = 0;
  // Local ordering across communicators: operations enqueued after this call
  // start only once `work` (of any communicator or ops) finished. CPU: the
  // worker thread waits for it; CUDA: the stream waits for its event (the
  // host never blocks) when `work` is a CUDA stream's.
  virtual void waitFor(std::shared_ptr<Work> work) = 0;
};

}  // namespace bagua
