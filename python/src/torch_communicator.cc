// TorchCommunicator: argument checks, then the Python backend's call on the
// ordered worker under the GIL; sends posted in order and completed by a
// second worker.
#include "python/src/torch_communicator.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

#include "kernels/cpu_reduce.h"
#include "runtime/comm/op_args.h"
#include "runtime/common/error.h"
#include "runtime/ops/cpu_ops.h"

namespace nb = nanobind;

namespace bagua::python {
namespace {

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// Whether the interpreter is shutting down (its GIL can no longer be taken).
bool finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// Runs `fn` holding the GIL; a Python exception becomes a std::runtime_error
// with its text (the worker's error mapping then names the operation and
// tells a timeout from a communication error).
template <typename Fn>
void withGil(Fn&& fn) {
  if (finalizing()) throw std::runtime_error("the Python interpreter is shutting down");
  nb::gil_scoped_acquire gil;
  try {
    fn();
  } catch (nb::python_error& e) {
    throw std::runtime_error(e.what());
  }
}

// A Python object that may be released on any thread.
struct PyHandle {
  nb::object object;
  ~PyHandle() {
    if (object.is_valid() && !finalizing()) {
      nb::gil_scoped_acquire gil;
      object.reset();
    } else {
      object.release();  // leaked rather than touched without the interpreter
    }
  }
};

// The op torch's Gloo is asked for: kAvg is a sum finished here.
const char* backendOp(ReduceOp op) { return op == ReduceOp::kAvg ? "sum" : reduceOpName(op); }

}  // namespace

TorchCommunicator::TorchCommunicator(nb::object backend, int rank, int size,
                                     std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), timeout_(timeout), backend_(std::move(backend)) {
  BAGUA_ENFORCE(size >= 1 && rank >= 0 && rank < size,
                "TorchCommunicator: rank " + std::to_string(rank) + " of " +
                    std::to_string(size) + " is out of range");
  worker_ = std::make_unique<OrderedWorker>(nullptr);
  sendWaiter_ = std::make_unique<OrderedWorker>(nullptr);
}

TorchCommunicator::~TorchCommunicator() {
  std::unique_ptr<OrderedWorker> worker = std::move(worker_);
  std::unique_ptr<OrderedWorker> waiter = std::move(sendWaiter_);
  if (PyGILState_Check()) {
    nb::gil_scoped_release release;  // queued operations need the GIL to finish
    worker.reset();
    waiter.reset();
  } else {
    worker.reset();
    waiter.reset();
  }
  if (finalizing()) {
    backend_.release();
    return;
  }
  nb::gil_scoped_acquire gil;
  backend_.reset();
}

template <typename... Args>
std::shared_ptr<Work> TorchCommunicator::call(std::string what, const char* method,
                                              Args... args) {
  return worker_->enqueue(std::move(what), [this, method, args...] {
    withGil([&] { backend_.attr(method)(args...); });
  });
}

std::shared_ptr<Work> TorchCommunicator::enqueue(std::string what, std::function<void()> fn) {
  return worker_->enqueue(std::move(what), std::move(fn));
}

std::shared_ptr<Work> TorchCommunicator::allreduce(void* data, size_t count, DType dtype,
                                                   ReduceOp op) {
  requireReduction("allreduce", dtype, op);
  checkElementCount("allreduce", count, dtype, 1);
  std::string what = describeElements("allreduce", count, dtype);
  return worker_->enqueue(what, [this, data, count, dtype, op] {
    if (count == 0) return;
    withGil([&] {
      backend_.attr("allreduce")(address(data), count, dtypeName(dtype), backendOp(op));
    });
    if (op == ReduceOp::kAvg) kernels::finishAverageCpu(dtype, data, count, size_);
  });
}

std::shared_ptr<Work> TorchCommunicator::reduce(const void* in, void* out, size_t count,
                                                DType dtype, ReduceOp op, int root) {
  requireReduction("reduce", dtype, op);
  checkRoot("reduce", root, size_);
  checkElementCount("reduce", count, dtype, 1);
  checkRootBuffer("reduce", "out", out, count, rank_, root);
  std::string what = describeElements("reduce", count, dtype);
  return worker_->enqueue(what, [this, in, out, count, dtype, op, root] {
    if (count == 0) return;
    withGil([&] {
      backend_.attr("reduce")(address(in), address(out), count, dtypeName(dtype), backendOp(op),
                              root);
    });
    if (op == ReduceOp::kAvg && rank_ == root) {
      kernels::finishAverageCpu(dtype, out, count, size_);
    }
  });
}

std::shared_ptr<Work> TorchCommunicator::reduceScatter(const void* in, void* out,
                                                       size_t countPerRank, DType dtype,
                                                       ReduceOp op) {
  requireReduction("reduceScatter", dtype, op);
  checkElementCount("reduceScatter", countPerRank, dtype, size_);
  std::string what = describeElements("reduceScatter", countPerRank, dtype);
  return worker_->enqueue(what, [this, in, out, countPerRank, dtype, op] {
    if (countPerRank == 0) return;
    withGil([&] {
      backend_.attr("reduce_scatter")(address(in), address(out), countPerRank, dtypeName(dtype),
                                      backendOp(op));
    });
    if (op == ReduceOp::kAvg) kernels::finishAverageCpu(dtype, out, countPerRank, size_);
  });
}

std::shared_ptr<Work> TorchCommunicator::allgather(const void* in, void* out,
                                                   size_t bytesPerRank) {
  return call(describeBytes("allgather", bytesPerRank), "allgather", address(in), address(out),
              bytesPerRank);
}

std::shared_ptr<Work> TorchCommunicator::gather(const void* in, void* out, size_t bytesPerRank,
                                                int root) {
  checkRoot("gather", root, size_);
  checkRootBuffer("gather", "out", out, bytesPerRank, rank_, root);
  return call(describeBytes("gather", bytesPerRank), "gather", address(in), address(out),
              bytesPerRank, root);
}

std::shared_ptr<Work> TorchCommunicator::scatter(const void* in, void* out, size_t bytesPerRank,
                                                 int root) {
  checkRoot("scatter", root, size_);
  checkRootBuffer("scatter", "in", in, bytesPerRank, rank_, root);
  return call(describeBytes("scatter", bytesPerRank), "scatter", address(in), address(out),
              bytesPerRank, root);
}

std::shared_ptr<Work> TorchCommunicator::alltoall(const void* in, void* out,
                                                  size_t bytesPerRank) {
  return call(describeBytes("alltoall", bytesPerRank), "alltoall", address(in), address(out),
              bytesPerRank);
}

std::shared_ptr<Work> TorchCommunicator::alltoallv(const void* in,
                                                   const std::vector<size_t>& sendBytes,
                                                   const std::vector<size_t>& sendOffsets,
                                                   void* out,
                                                   const std::vector<size_t>& recvBytes,
                                                   const std::vector<size_t>& recvOffsets) {
  checkAlltoallv(rank_, size_, sendBytes, sendOffsets, recvBytes, recvOffsets);
  return call(describeBytes("alltoallv", totalBytes(sendBytes)), "alltoallv", address(in),
              sendBytes, sendOffsets, address(out), recvBytes, recvOffsets);
}

std::shared_ptr<Work> TorchCommunicator::broadcast(void* data, size_t bytes, int root) {
  checkRoot("broadcast", root, size_);
  return call(describeBytes("broadcast", bytes), "broadcast", address(data), bytes, root);
}

std::shared_ptr<Work> TorchCommunicator::send(const void* data, size_t bytes, int peer) {
  checkPeer("send", peer, rank_, size_);
  if (bytes == 0) return worker_->enqueue(describeBytes("send", 0), [] {});
  // Posted in order on the worker without waiting (two ranks sending to
  // each other before receiving must not deadlock); the waiter completes it.
  auto handle = std::make_shared<PyHandle>();
  std::string what = describeBytes("send", bytes);
  auto posted = worker_->enqueue("post " + what, [this, handle, data, bytes, peer] {
    withGil([&] { handle->object = backend_.attr("isend")(address(data), bytes, peer); });
  });
  return sendWaiter_->enqueue(what, [posted, handle, timeout = timeout_] {
    posted->wait(timeout);
    withGil([&] { handle->object.attr("wait")(); });
  });
}

std::shared_ptr<Work> TorchCommunicator::recv(void* data, size_t bytes, int peer) {
  checkPeer("recv", peer, rank_, size_);
  if (bytes == 0) return worker_->enqueue(describeBytes("recv", 0), [] {});
  return call(describeBytes("recv", bytes), "recv", address(data), bytes, peer);
}

std::shared_ptr<Work> TorchCommunicator::barrier() { return call("barrier", "barrier"); }

void TorchCommunicator::waitFor(std::shared_ptr<Work> work) {
  std::string what = "waiting for " + work->what();
  worker_->enqueue(std::move(what),
                   [work = std::move(work), timeout = timeout_] { work->wait(timeout); });
}

std::shared_ptr<ProcessGroup> torchGlooGroup(nb::object backend, int rank, int size,
                                             double timeoutS) {
  auto timeout = timeoutFromSeconds(timeoutS);
  auto comm = std::make_shared<TorchCommunicator>(std::move(backend), rank, size, timeout);
  auto ops = std::make_shared<CpuOps>(*comm);
  return ProcessGroup::fromParts(comm, ops, timeout);
}

}  // namespace bagua::python
