// The store of one run: small values (listen handles, addresses, results,
// error reports) that its ranks exchange through the run's directory, a
// bagua::FileStore (runtime/store), so ranks on other hosts can share it
// over a common filesystem. Polls fast: the ranks of a run arrive within
// microseconds of each other. Waits that time out name the rank awaited.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "runtime/store/file_store.h"

namespace bagua::net_perf {

class RunStore {
 public:
  // Every wait gives up after `timeout`.
  RunStore(const std::string& dir, std::chrono::seconds timeout);

  // Sets `key` (atomically: a reader sees all of the value or none).
  void put(const std::string& key, const std::string& value);
  // Waits for `key`, written by rank `owner`, and returns it; throws
  // TimeoutError naming the rank and `what` was awaited.
  std::string get(const std::string& key, int owner, const std::string& what);
  // Whether `key` is set now.
  bool has(const std::string& key) const { return store_.has(key); }
  // When `key` was written; nullopt if it is not set.
  std::optional<std::filesystem::file_time_type> writtenAt(const std::string& key) const {
    return store_.writtenAt(key);
  }
  // All `world` ranks meet at barrier `name`; throws TimeoutError naming the
  // ranks that did not come.
  void barrier(const std::string& name, int rank, int world);

  const std::string& dir() const { return store_.dir(); }

 private:
  FileStore store_;
  std::chrono::seconds timeout_;
};

}  // namespace bagua::net_perf
