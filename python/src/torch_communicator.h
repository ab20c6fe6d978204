// A CPU communicator over torch's own Gloo process group, for installs
// without libgloo: every pip install can train on CPU. Each operation runs
// on an ordered worker thread (as GlooCommunicator's do) and calls a Python
// backend (bagua/torch_api/_torch_gloo.py) under the GIL; torch releases the
// GIL while its collective runs. Arguments are checked here with the same
// messages as the other communicators; kAvg is a sum finished by the
// kernels' CPU average (the Gloo path's rule, integers truncated).
//
// GIL rule: a thread that holds the GIL must never wait for this
// communicator's Work (the worker needs the GIL to run it). The binding
// releases the GIL around every wait (ProcessGroup collectives, Reducer
// wait, construction and destruction of reducers and averagers, this
// destructor).
#pragma once

#include <nanobind/nanobind.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "python/src/process_group.h"
#include "runtime/comm/cpu_communicator.h"
#include "runtime/comm/ordered_worker.h"

namespace bagua::python {

class TorchCommunicator final : public CpuCommunicator {
 public:
  // `backend`: a _torch_gloo.TorchGlooBackend of `size` ranks, this one `rank`.
  TorchCommunicator(nanobind::object backend, int rank, int size,
                    std::chrono::milliseconds timeout);
  ~TorchCommunicator() override;

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
  // Enqueues backend.<method>(args...) (under the GIL, on the worker).
  template <typename... Args>
  std::shared_ptr<Work> call(std::string what, const char* method, Args... args);

  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  nanobind::object backend_;
  std::unique_ptr<OrderedWorker> worker_;
  std::unique_ptr<OrderedWorker> sendWaiter_;  // completes sends, so sends never block recvs
};

// A ProcessGroup (CPU) over `backend`.
std::shared_ptr<ProcessGroup> torchGlooGroup(nanobind::object backend, int rank, int size,
                                             double timeoutS);

}  // namespace bagua::python
