// Last line of defence against a hang in a rank process: a thread that ends
// the process when a plugin call has not returned for the timeout plus a
// grace period. The measurement loops time out on their own; this catches
// the calls that block (connect, accept, test ... must never block).
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace bagua::net_perf {

// Starts the watchdog thread (detached; it lives until the process exits).
// On a stuck call it prints the reason, passes it to report, and _exits.
void startWatchdog(int rank, std::chrono::seconds timeout,
                   std::function<void(const std::string&)> report);

}  // namespace bagua::net_perf
