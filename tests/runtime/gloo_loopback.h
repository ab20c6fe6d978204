// The Gloo options of the multi-rank tests: loopback only, a 20 s timeout
// (a hung peer fails the test well within its suite's limit); connect() makes
// one rank's communicator and CPU ops with them.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/comm/gloo_communicator.h"
#include "runtime/ops/cpu_ops.h"

namespace bagua::testing {

inline GlooCommunicator::Options loopbackGloo(const std::string& prefix = "gloo") {
  GlooCommunicator::Options o;
  o.iface = "lo";
  o.timeout = std::chrono::seconds(20);
  o.prefix = prefix;
  return o;
}

// One rank's Gloo communicator over loopback and its CPU ops.
struct Gloo {
  std::shared_ptr<GlooCommunicator> comm;
  std::shared_ptr<CpuOps> ops;
};

inline Gloo connect(Store& store, int rank, int size, const std::string& prefix) {
  Gloo g;
  g.comm = std::make_shared<GlooCommunicator>(store, rank, size, loopbackGloo(prefix));
  g.ops = std::make_shared<CpuOps>(*g.comm);
  return g;
}

}  // namespace bagua::testing
