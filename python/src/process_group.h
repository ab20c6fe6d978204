// The binding's view of libbagua's communicators: a ProcessGroup (a
// communicator and the DeviceOps of its device), with the types Python
// passes (pointers as integers, dtype and op names as strings, timeouts as
// seconds). The collectives of a ProcessGroup are in collectives.cc; the
// Reducer over groups is in reducer_binding.h.
#pragma once

#include <cstdint>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/bucket/tensor_spec.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/counting_communicator.h"
#include "runtime/ops/device_ops.h"
#include "runtime/ops/step_ops.h"
#include "runtime/store/store.h"

namespace bagua::python {

bool hasNccl();
bool hasGloo();
// Destroys every NCCL communicator of the process, newest first (the order
// ranks share; runtime/comm/nccl_communicator.h); a no-op without NCCL.
void shutdownNccl();

// A timeout Python passes (`timeout_s`, seconds) as the runtime holds it;
// throws InvalidArgument unless it is positive.
std::chrono::milliseconds timeoutFromSeconds(double seconds);

class ProcessGroup;
// The training side's StepOps (runtime/ops/step_ops.h) for the group's
// device: a CUDA group's communicator device is made current for each
// operation (the caller's current device may be another, e.g. cuda:0 in a
// script that never called set_device).
StepOpsFactory stepOpsFor(const ProcessGroup& group);

// Tensors as Python passes them: (name, data pointer, element count, dtype name).
using TensorTuples = std::vector<std::tuple<std::string, uintptr_t, size_t, std::string>>;
// The same as TensorSpecs on `group`'s device.
std::vector<TensorSpec> tensorSpecs(const TensorTuples& tensors, Device device);

class ProcessGroup {
 public:
  static std::shared_ptr<ProcessGroup> gloo(Store& store, int rank, int size,
                                            const std::string& prefix, const std::string& iface,
                                            double timeoutS);
  static std::shared_ptr<ProcessGroup> nccl(Store& store, int rank, int size, int device,
                                            const std::string& prefix, double timeoutS,
                                            bool background = false);
  // A group over a communicator made elsewhere (torch_communicator.h).
  static std::shared_ptr<ProcessGroup> fromParts(std::shared_ptr<Communicator> comm,
                                                 std::shared_ptr<DeviceOps> ops,
                                                 std::chrono::milliseconds timeout);

  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  std::string deviceName() const { return comm_->device() == Device::kCpu ? "cpu" : "cuda"; }

  // The collectives (collectives.cc). CPU group: each blocks until done
  // (the group's timeout). CUDA group: each is ordered after the work on the
  // caller's `stream` (a cudaStream_t as an integer, 0: the legacy default
  // stream), and that stream's later work after it; the host does not wait.
  void allreduce(uintptr_t ptr, size_t count, const std::string& dtype, const std::string& op,
                 uintptr_t stream);
  void reduce(uintptr_t in, uintptr_t out, size_t count, const std::string& dtype,
              const std::string& op, int root, uintptr_t stream);
  void broadcast(uintptr_t ptr, size_t nbytes, int root, uintptr_t stream);
  void allgather(uintptr_t in, uintptr_t out, size_t bytesPerRank, uintptr_t stream);
  void gather(uintptr_t in, uintptr_t out, size_t bytesPerRank, int root, uintptr_t stream);
  void scatter(uintptr_t in, uintptr_t out, size_t bytesPerRank, int root, uintptr_t stream);
  void reduceScatter(uintptr_t in, uintptr_t out, size_t countPerRank, const std::string& dtype,
                     const std::string& op, uintptr_t stream);
  void alltoall(uintptr_t in, uintptr_t out, size_t bytesPerRank, uintptr_t stream);
  void alltoallV(uintptr_t in, const std::vector<size_t>& sendBytes,
                 const std::vector<size_t>& sendOffsets, uintptr_t out,
                 const std::vector<size_t>& recvBytes, const std::vector<size_t>& recvOffsets,
                 uintptr_t stream);
  void send(uintptr_t ptr, size_t nbytes, int peer, uintptr_t stream);
  void recv(uintptr_t ptr, size_t nbytes, int peer, uintptr_t stream);
  // Blocks until every rank entered it (both kinds of group).
  void barrier();
  // CUDA: later operations of the group wait for the work already on `stream`.
  void waitStream(uintptr_t stream);

  // The communicator algorithms use: counts the bytes this rank sends.
  std::shared_ptr<Communicator> comm() const { return comm_; }
  // Bytes sent through this group so far (CountingCommunicator's formulas).
  uint64_t bytesSent() const { return comm_->bytesSent(); }
  std::shared_ptr<DeviceOps> ops() const { return ops_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // The Gloo or NCCL communicator itself (comm() counts its bytes).
  std::shared_ptr<Communicator> raw() const { return raw_; }

 private:
  // Runs `enqueue` (one operation on comm_) with the ordering above: the one
  // place where "stream in, stream out" happens.
  void run(uintptr_t stream, const std::function<std::shared_ptr<Work>()>& enqueue);

  void setComm(std::shared_ptr<Communicator> raw);
  friend class MinMaxUInt8Allreduce;  // runs its ByteGrad through run()

  std::shared_ptr<Communicator> raw_;           // the Gloo or NCCL communicator
  std::shared_ptr<CountingCommunicator> comm_;  // raw_, counted
  std::shared_ptr<DeviceOps> ops_;
  std::chrono::milliseconds timeout_{0};
  std::mutex lastMutex_;
  std::shared_ptr<Work> last_;  // CUDA: the latest operation, polled for errors
};

}  // namespace bagua::python
