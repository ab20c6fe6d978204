// The binding's view of libbagua: a ProcessGroup (a communicator and the
// DeviceOps of its device) and a Reducer over it, with the types Python
// passes (pointers as integers, dtype and op names as strings).
#pragma once

#include <cstdint>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/algorithms/registry.h"
#include "runtime/comm/communicator.h"
#include "runtime/ops/device_ops.h"
#include "runtime/reducer/reducer.h"
#include "runtime/store/store.h"

namespace bagua::python {

bool hasNccl();

class ProcessGroup {
 public:
  static std::shared_ptr<ProcessGroup> gloo(Store& store, int rank, int size,
                                            const std::string& prefix, const std::string& iface,
                                            double timeoutS);
  static std::shared_ptr<ProcessGroup> nccl(Store& store, int rank, int size, int device,
                                            const std::string& prefix, double timeoutS);

  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  std::string deviceName() const { return comm_->device() == Device::kCpu ? "cpu" : "cuda"; }
  void broadcast(uintptr_t ptr, size_t nbytes, int root);
  void allreduce(uintptr_t ptr, size_t count, const std::string& dtype, const std::string& op);
  void barrier();
  void waitStream(uintptr_t stream);

  std::shared_ptr<Communicator> comm() const { return comm_; }
  std::shared_ptr<DeviceOps> ops() const { return ops_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<DeviceOps> ops_;
  std::chrono::milliseconds timeout_{0};
};

class PyReducer {
 public:
  PyReducer(ProcessGroup& group, Store& store, const std::string& algorithm,
            const std::vector<std::tuple<std::string, uintptr_t, size_t, std::string>>& tensors,
            size_t bucketBytes, double timeoutS, const std::string& prefix,
            const OptionMap& options);
  void markReady(size_t index, uintptr_t ptr) {
    reducer_->markReady(index, reinterpret_cast<void*>(ptr));
  }
  void markAllReady() { reducer_->markAllReady(); }
  void wait() { reducer_->wait(); }
  size_t numBuckets() const { return reducer_->buckets().size(); }

 private:
  std::unique_ptr<Reducer> reducer_;
};

}  // namespace bagua::python
