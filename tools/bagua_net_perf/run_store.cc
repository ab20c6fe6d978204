// See run_store.h. The FileStore's own timeout errors name keys; here they
// become the tool's TimeoutError naming ranks.
#include "tools/bagua_net_perf/run_store.h"

#include "runtime/common/error.h"
#include "runtime/store/barrier.h"
#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {
namespace {

// Ranks of one run poll each other's keys: 20 us doubling up to 2 ms.
constexpr FilePolling kPolling{std::chrono::microseconds(20), std::chrono::microseconds(2000)};

}  // namespace

RunStore::RunStore(const std::string& dir, std::chrono::seconds timeout)
    : store_(dir, kPolling), timeout_(timeout) {}

void RunStore::put(const std::string& key, const std::string& value) {
  store_.set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string RunStore::get(const std::string& key, int owner, const std::string& what) {
  try {
    std::vector<uint8_t> value = store_.get(key, timeout_);
    return std::string(value.begin(), value.end());
  } catch (const bagua::TimeoutError&) {
    std::string rank = "rank " + std::to_string(owner);
    throw plugin_driver::TimeoutError("timed out after " + std::to_string(timeout_.count()) +
                                      " s waiting for " + rank + "'s " + what + " (key '" + key +
                                      "' missing from store " + dir() + "): is " + rank +
                                      " running and alive?");
  }
}

void RunStore::barrier(const std::string& name, int rank, int world) {
  try {
    bagua::barrier(store_, rank, world, name, timeout_);
  } catch (const bagua::TimeoutError& e) {
    throw plugin_driver::TimeoutError(std::string(e.what()) + " (store " + dir() + ")");
  }
}

}  // namespace bagua::net_perf
