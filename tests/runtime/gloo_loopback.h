// The Gloo options of the multi-rank tests: loopback only, a 20 s timeout
// (a hung peer fails the test well within its suite's limit).
#pragma once

#include <chrono>
#include <string>

#include "runtime/comm/gloo_communicator.h"

namespace bagua::testing {

inline GlooCommunicator::Options loopbackGloo(const std::string& prefix = "gloo") {
  GlooCommunicator::Options o;
  o.iface = "lo";
  o.timeout = std::chrono::seconds(20);
  o.prefix = prefix;
  return o;
}

}  // namespace bagua::testing
