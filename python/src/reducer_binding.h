// The binding of the runtime's Reducer (Python's bagua._C.Reducer): tensors
// arrive as (name, data pointer, element count, dtype name) and the timeout
// as seconds; with an intra-node group it runs the algorithm hierarchically.
#pragma once

#include <cstdint>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "python/src/process_group.h"
#include "runtime/algorithms/registry.h"
#include "runtime/reducer/reducer.h"
#include "runtime/store/store.h"

namespace bagua::python {

class PyReducer {
 public:
  PyReducer(ProcessGroup& group, Store& store, const std::string& algorithm,
            const std::vector<std::tuple<std::string, uintptr_t, size_t, std::string>>& tensors,
            size_t bucketBytes, double timeoutS, const std::string& prefix,
            const OptionMap& options, ProcessGroup* intra, ProcessGroup* inter, int nodes);
  // Waits for launched work with the GIL released (a CPU group over torch's
  // Gloo needs the GIL to finish it: torch_communicator.h).
  ~PyReducer();
  void markReady(size_t index, uintptr_t ptr) {
    reducer_->markReady(index, reinterpret_cast<void*>(ptr));
  }
  void markAllReady() { reducer_->markAllReady(); }
  void wait() { reducer_->wait(); }
  size_t numBuckets() const { return reducer_->buckets().size(); }
  std::unique_ptr<DeviceBuffer> saveElementState() { return reducer_->saveElementState(); }
  void loadElementState(DeviceBuffer& state) { reducer_->loadElementState(state); }
  Device device() const { return device_; }

 private:
  std::unique_ptr<Reducer> reducer_;
  Device device_ = Device::kCpu;
};

}  // namespace bagua::python
