// See watchdog.h.
#include "tools/bagua_net_perf/watchdog.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "tools/plugin_driver/errors.h"
#include "tools/plugin_driver/plugin_loader.h"

namespace bagua::net_perf {

using plugin_driver::currentPluginCall;
using plugin_driver::kExitError;
using plugin_driver::pluginCallCount;

namespace {

constexpr std::chrono::seconds kGrace{5};  // lets the loops' own timeouts report first

}  // namespace

void startWatchdog(int rank, std::chrono::seconds timeout,
                   std::function<void(const std::string&)> report) {
  std::thread([rank, timeout, report] {
    using Clock = std::chrono::steady_clock;
    uint64_t lastCount = pluginCallCount();
    auto since = Clock::now();
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      uint64_t count = pluginCallCount();
      const char* call = currentPluginCall();
      if (count != lastCount || call == nullptr) {
        lastCount = count;
        since = Clock::now();
        continue;
      }
      std::chrono::duration<double> stuck = Clock::now() - since;
      if (stuck > timeout + kGrace) {
        char text[160];
        std::snprintf(text, sizeof(text),
                      "rank %d: plugin call %s has not returned for %.0f s; giving up", rank, call,
                      stuck.count());
        std::fprintf(stderr, "[bagua-net-perf] error: %s\n", text);
        std::fflush(stderr);
        report(text);
        _exit(kExitError);
      }
    }
  }).detach();
}

}  // namespace bagua::net_perf
