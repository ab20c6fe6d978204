// The Redis client of the cache: one hiredis connection per server, keys
// spread over the servers by cacheKeyHash (client-side sharding, as the
// original's cluster mode; not Redis Cluster). A batch is one MGET or MSET
// per server, every server's request written before any reply is read, so
// a batch costs one round trip whatever the number of keys and servers.
//
// Connections are made in the constructor (AUTH, then PING); a connection
// that fails later is closed and remade by the next call. Thread-safe: calls
// take turns on the connections (the Python layer makes one per process,
// DataLoader workers included, and releases the GIL around them, so threads
// of one process share it). The process must ignore SIGPIPE (Python does),
// as hiredis writes with write(2).
//
// Built without hiredis (meson -Dredis=disabled, or libhiredis-dev absent),
// the constructor throws NotAvailable saying how to get it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/data/value_pool.h"

namespace bagua {

struct RedisServer {
  std::string host;
  int port = 6379;
};

// Values read by RedisShards::getMany, in the order of the keys. Each value
// lives in its own buffer, which owner(i) keeps alive: a caller may hand the
// bytes on without copying them (the Python binding does).
class RedisValues {
 public:
  size_t size() const { return values_.size(); }
  // The value of key i, or nullopt when the server has no such key.
  const std::optional<std::string_view>& operator[](size_t i) const { return values_[i]; }
  // What keeps value i's bytes alive (null for a missing key).
  const std::shared_ptr<char[]>& owner(size_t i) const { return owners_[i]; }

 private:
  friend class RedisShards;
  std::vector<std::shared_ptr<char[]>> owners_;
  std::vector<std::optional<std::string_view>> values_;
};

class RedisShards {
 public:
  // Connects to every server and checks it answers (AUTH `password` when
  // not empty, then PING), each step bounded by `timeout`. Throws
  // InvalidArgument (no servers, a port out of range), CacheConnectError,
  // CacheAuthError, or NotAvailable in a build without hiredis.
  RedisShards(std::vector<RedisServer> servers, std::string password,
              std::chrono::milliseconds timeout);
  ~RedisShards();
  RedisShards(const RedisShards&) = delete;
  RedisShards& operator=(const RedisShards&) = delete;

  // Whether this build has the Redis client.
  static bool available();

  size_t serverCount() const { return servers_.size(); }
  const RedisServer& server(size_t i) const { return servers_[i]; }
  // The server `key` lives on.
  size_t serverOf(std::string_view key) const;

  // Values of `keys`. Throws CacheConnectError or CacheStoreError.
  RedisValues getMany(const std::vector<std::string_view>& keys);
  // Stores (key, value) pairs. Throws CacheConnectError or CacheStoreError.
  void setMany(const std::vector<std::pair<std::string_view, std::string_view>>& items);
  // The text of INFO `section` of every server, in server order.
  std::vector<std::string> info(std::string_view section);
  // Number of keys on every server, in server order.
  std::vector<int64_t> keyCounts();

 private:
  struct Connection;
  using Commands = std::vector<std::vector<std::string_view>>;
  // Sends one command per server (none to a server whose argument list is
  // empty), all before any reply is awaited, then calls read(server) for
  // each. A connection whose reply was not read in full is closed (it would
  // be out of step; the next call reconnects); the others are read anyway,
  // and the first error is rethrown after all.
  void exchange(const Commands& commands, const std::function<void(size_t)>& read);

  std::vector<RedisServer> servers_;
  std::string password_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;  // held by each public call: one exchange at a time
  std::vector<std::unique_ptr<Connection>> connections_;  // (mutex_)
  std::shared_ptr<ValuePool> pool_;  // buffers of fetched values, reused (mutex_)
};

}  // namespace bagua
