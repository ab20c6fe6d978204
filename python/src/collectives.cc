// ProcessGroup's collectives for Python: names parsed, pointers converted,
// and one ordering helper (run) for both kinds of group. A CPU (Gloo) group
// blocks the calling thread (the binding releases the GIL) until the
// operation finished or the group's timeout passed. A CUDA (NCCL) group
// never blocks: the communicator's stream waits for an event recorded on the
// caller's stream, the operation is enqueued, and the caller's stream waits
// for an event recorded after it; errors of an earlier operation surface at
// the next call (its Work is polled) or at the next synchronization.
#include "python/src/process_group.h"
#include "runtime/common/error.h"

#if BAGUA_PYTHON_HAVE_NCCL
#include "runtime/comm/nccl_communicator.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_scope.h"
#endif

namespace bagua::python {
namespace {

void* pointer(uintptr_t p) { return reinterpret_cast<void*>(p); }

#if BAGUA_PYTHON_HAVE_NCCL
// `waiter` waits for the work enqueued on `stream` so far. Never blocks the
// host; the event is released once the wait is done.
void streamWaits(cudaStream_t waiter, cudaStream_t stream) {
  cudaEvent_t event;
  BAGUA_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  BAGUA_CUDA_CHECK(cudaEventRecord(event, stream));
  BAGUA_CUDA_CHECK(cudaStreamWaitEvent(waiter, event, 0));
  BAGUA_CUDA_CHECK(cudaEventDestroy(event));
}
#endif

}  // namespace

void ProcessGroup::run(uintptr_t stream, const std::function<std::shared_ptr<Work>()>& enqueue) {
#if BAGUA_PYTHON_HAVE_NCCL
  if (auto* nccl = dynamic_cast<NcclCommunicator*>(raw_.get())) {
    std::lock_guard<std::mutex> lock(lastMutex_);
    if (last_ && last_->done()) last_.reset();  // rethrows an earlier failure
    DeviceScope scope(nccl->cudaDevice());
    auto caller = reinterpret_cast<cudaStream_t>(stream);
    streamWaits(nccl->stream(), caller);
    last_ = enqueue();
    streamWaits(caller, nccl->stream());
    return;
  }
#endif
  (void)stream;
  enqueue()->wait(timeout_);
}

void ProcessGroup::allreduce(uintptr_t ptr, size_t count, const std::string& dtype,
                             const std::string& op, uintptr_t stream) {
  const DType d = parseDType(dtype);
  const ReduceOp o = parseReduceOp(op);
  run(stream, [&] { return comm_->allreduce(pointer(ptr), count, d, o); });
}

void ProcessGroup::reduce(uintptr_t in, uintptr_t out, size_t count, const std::string& dtype,
                          const std::string& op, int root, uintptr_t stream) {
  const DType d = parseDType(dtype);
  const ReduceOp o = parseReduceOp(op);
  run(stream, [&] { return comm_->reduce(pointer(in), pointer(out), count, d, o, root); });
}

void ProcessGroup::broadcast(uintptr_t ptr, size_t nbytes, int root, uintptr_t stream) {
  run(stream, [&] { return comm_->broadcast(pointer(ptr), nbytes, root); });
}

void ProcessGroup::allgather(uintptr_t in, uintptr_t out, size_t bytesPerRank, uintptr_t stream) {
  run(stream, [&] { return comm_->allgather(pointer(in), pointer(out), bytesPerRank); });
}

void ProcessGroup::gather(uintptr_t in, uintptr_t out, size_t bytesPerRank, int root,
                          uintptr_t stream) {
  run(stream, [&] { return comm_->gather(pointer(in), pointer(out), bytesPerRank, root); });
}

void ProcessGroup::scatter(uintptr_t in, uintptr_t out, size_t bytesPerRank, int root,
                           uintptr_t stream) {
  run(stream, [&] { return comm_->scatter(pointer(in), pointer(out), bytesPerRank, root); });
}

void ProcessGroup::reduceScatter(uintptr_t in, uintptr_t out, size_t countPerRank,
                                 const std::string& dtype, const std::string& op,
                                 uintptr_t stream) {
  const DType d = parseDType(dtype);
  const ReduceOp o = parseReduceOp(op);
  run(stream, [&] { return comm_->reduceScatter(pointer(in), pointer(out), countPerRank, d, o); });
}

void ProcessGroup::alltoall(uintptr_t in, uintptr_t out, size_t bytesPerRank, uintptr_t stream) {
  run(stream, [&] { return comm_->alltoall(pointer(in), pointer(out), bytesPerRank); });
}

void ProcessGroup::alltoallV(uintptr_t in, const std::vector<size_t>& sendBytes,
                             const std::vector<size_t>& sendOffsets, uintptr_t out,
                             const std::vector<size_t>& recvBytes,
                             const std::vector<size_t>& recvOffsets, uintptr_t stream) {
  run(stream, [&] {
    return comm_->alltoallv(pointer(in), sendBytes, sendOffsets, pointer(out), recvBytes,
                            recvOffsets);
  });
}

void ProcessGroup::send(uintptr_t ptr, size_t nbytes, int peer, uintptr_t stream) {
  run(stream, [&] { return comm_->send(pointer(ptr), nbytes, peer); });
}

void ProcessGroup::recv(uintptr_t ptr, size_t nbytes, int peer, uintptr_t stream) {
  run(stream, [&] { return comm_->recv(pointer(ptr), nbytes, peer); });
}

void ProcessGroup::barrier() { comm_->barrier()->wait(timeout_); }

void ProcessGroup::waitStream(uintptr_t stream) {
#if BAGUA_PYTHON_HAVE_NCCL
  auto* nccl = dynamic_cast<NcclCommunicator*>(raw_.get());
  if (nccl == nullptr) return;  // CPU group: work is ordered by the host
  DeviceScope scope(nccl->cudaDevice());
  streamWaits(nccl->stream(), reinterpret_cast<cudaStream_t>(stream));
#else
  (void)stream;
#endif
}

}  // namespace bagua::python
