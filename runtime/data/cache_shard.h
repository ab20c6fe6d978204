// One shard of the in-memory cache (memory_cache.h), laid out in shared
// memory so that every process mapping the segment uses it directly:
//
//   [ShardHeader: robust process-shared mutex, log positions, counters]
//   [Slot index: slotCount x {hash, log position}, open addressing]
//   [ring: ringBytes of records {RecordHeader, key, value}, 8-byte aligned]
//
// Eviction: FIFO. Records are appended at `head` of a circular log and the
// oldest are dropped from `tail` when a new record needs room or the index
// is 3/4 full. Why FIFO: a hit writes nothing (LRU would write shared
// metadata on every read, a cache line bounced between every DataLoader
// worker), space is reclaimed in order with no fragmentation, and on the
// access pattern of a dataset cache (each key once per epoch) LRU keeps no
// better set than FIFO. A record larger than the ring is refused (counted).
//
// A process that dies holding the mutex (a killed DataLoader worker) leaves
// it EOWNERDEAD: the next locker empties the shard (its state may be half
// written), marks the mutex consistent and counts a recovery.
#pragma once

#include <pthread.h>

#include <cstdint>
#include <functional>
#include <string_view>

namespace bagua {

// Counters of one shard; summed over shards by MemoryCache::stats().
struct CacheShardCounters {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t inserts = 0;
  uint64_t evictions = 0;   // live records dropped to make room
  uint64_t rejected = 0;    // records larger than a shard's ring
  uint64_t recoveries = 0;  // shards emptied after a process died holding their lock
  uint64_t entries = 0;     // live records now
  uint64_t bytes = 0;       // bytes of live records now (headers and keys included)
};

// Receives a value found by get(): called once with the value's size, under
// the shard's lock; returns where to copy it (nullptr: do not copy).
using CacheValueSink = std::function<uint8_t*(size_t)>;

enum class CachePutResult { kStored, kTooLarge };

class CacheShard {
 public:
  // Bytes of a shard with `slotCount` slots (a power of two) and `ringBytes`
  // of log (a multiple of 8).
  static uint64_t bytesFor(uint64_t slotCount, uint64_t ringBytes);
  // Initializes a shard in zero-filled memory at `base` (its mutex, empty log).
  static void initialize(uint8_t* base);

  CacheShard(uint8_t* base, uint64_t slotCount, uint64_t ringBytes);

  // Copies the value of `key` (whose cacheKeyHash is `hash`) to where `sink`
  // says; false on a miss.
  bool get(std::string_view key, uint64_t hash, const CacheValueSink& sink);
  // Stores `value` under `key`, replacing an older value, evicting the
  // oldest records as needed.
  CachePutResult put(std::string_view key, uint64_t hash, std::string_view value);
  // Drops every record (counters other than entries and bytes are kept).
  void clear();
  CacheShardCounters counters();

 private:
  struct Header;
  struct Slot;
  struct Record;
  class Lock;

  Header* header() const;
  Slot* slots() const;
  Record* recordAt(uint64_t position) const;
  // Index of the slot holding `key`, or slotCount_ when absent.
  uint64_t find(std::string_view key, uint64_t hash) const;
  // Index of the slot pointing to the record at `position`, or slotCount_.
  uint64_t findPosition(uint64_t hash, uint64_t position) const;
  void eraseSlot(uint64_t index);
  void insertSlot(uint64_t hash, uint64_t position);
  // Drops the record (or padding) at the tail of the log.
  void evictOldest();
  void reset();

  uint8_t* base_;
  uint64_t slotCount_;
  uint64_t ringBytes_;
};

}  // namespace bagua
