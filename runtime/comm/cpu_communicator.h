// A Communicator for CPU buffers whose operations run on one ordered worker
// thread (OrderedWorker). Two implementations: GlooCommunicator (libgloo's
// TCP transport, C++ only) and, in the Python binding, one over torch's own
// Gloo process group (python/src/torch_communicator.h) for installs without
// libgloo. CpuOps runs the algorithms' compute steps through enqueue().
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runtime/comm/communicator.h"

namespace bagua {

class CpuCommunicator : public Communicator {
 public:
  Device device() const final { return Device::kCpu; }
  // Runs `fn` on the worker thread, ordered with the collectives.
  virtual std::shared_ptr<Work> enqueue(std::string what, std::function<void()> fn) = 0;
};

}  // namespace bagua
