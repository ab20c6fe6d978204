// The 64-bit hash of a cache key: picks the shard of the in-memory cache and
// the Redis server of a key (client-side sharding), so every process of a
// job, whatever its language or build, must compute the same value. FNV-1a
// over the bytes, then MurmurHash3's 64-bit finalizer so that keys differing
// only in their last digits ("ds_17", "ds_18") spread over all the bits
// (FNV alone leaves the high bits, which choose the shard, correlated).
#pragma once

#include <cstdint>
#include <string_view>

namespace bagua {

constexpr uint64_t cacheKeyHash(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (char c : key) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ULL;  // FNV-1a 64 prime
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

// The server of `key` among `servers` (> 0) under client-side sharding.
constexpr size_t serverOfKey(std::string_view key, size_t servers) {
  return static_cast<size_t>(cacheKeyHash(key) % servers);
}

}  // namespace bagua
