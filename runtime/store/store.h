// A key/value store with blocking waits: how the ranks of a job meet
// (rendezvous) and exchange small blobs (NCCL unique ids, registration
// fingerprints). Implementations: FileStore (a directory all ranks see) and
// TcpStore (rank 0 serves, Boost.Asio). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace bagua {

class Store {
 public:
  virtual ~Store() = default;
  // Sets `key` to `value`, replacing any earlier value.
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  // Returns the value of `key`, waiting up to `timeout` for it to be set;
  // throws TimeoutError naming the key.
  virtual std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Adds `delta` to the integer stored at `key` (0 if unset) and returns the
  // new value, atomically across all ranks.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Waits until every key is set; throws TimeoutError listing the keys still
  // missing when `timeout` passes.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
};

}  // namespace bagua
