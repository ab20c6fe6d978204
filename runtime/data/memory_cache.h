// The in-memory cache of CachedDataset(backend="memory"): a bounded
// key/value store in one shared segment (shared_segment.h) per node, split
// into shards (cache_shard.h: FIFO eviction, one robust process-shared lock
// each) chosen by the key's hash. Every process that maps the segment (the
// ranks of a node and their DataLoader workers) reads and writes it directly:
// no server, no copies beyond the value's own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/data/cache_shard.h"
#include "runtime/data/shared_segment.h"

namespace bagua {

class MemoryCache {
 public:
  // Smallest capacity accepted.
  static constexpr uint64_t kMinCapacityBytes = 64 * 1024;

  // A new, empty cache holding at most `capacityBytes` (segment included).
  // `shards` 0 picks one per 64 MiB, from 1 to 16; `meanEntryBytes` sizes the
  // index (at most capacity / meanEntryBytes entries). Throws
  // InvalidArgument naming a capacity, shard count or entry size out of range.
  static std::unique_ptr<MemoryCache> create(uint64_t capacityBytes, uint32_t shards = 0,
                                             uint64_t meanEntryBytes = 1024);
  // The cache another process of this node created (its attachPath()).
  // Throws InvalidArgument when the path is not such a cache.
  static std::unique_ptr<MemoryCache> attach(const std::string& path);

  // Copies the value of `key` to where `sink` says; false on a miss.
  bool get(std::string_view key, const CacheValueSink& sink);
  // Stores `value` under `key` (replacing it); kTooLarge (counted in
  // `rejected`) when the record exceeds maxValueBytes().
  CachePutResult put(std::string_view key, std::string_view value);
  // Drops every entry.
  void clear();
  // Counters summed over the shards: node-wide, every process included.
  CacheShardCounters stats();

  std::string attachPath() const { return segment_.attachPath(); }
  uint32_t shardCount() const { return static_cast<uint32_t>(shards_.size()); }
  uint64_t capacityBytes() const { return segment_.size(); }
  // Largest key + value a shard takes (a little less than its ring).
  uint64_t maxValueBytes() const;

 private:
  explicit MemoryCache(SharedSegment segment);
  CacheShard& shardOf(uint64_t hash) { return shards_[(hash >> 32) % shards_.size()]; }

  SharedSegment segment_;
  std::vector<CacheShard> shards_;
};

}  // namespace bagua
