// MemoryCache: the segment's layout (a header page, then one page-aligned
// block per shard) and the dispatch of keys to shards.
#include "runtime/data/memory_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "runtime/common/error.h"
#include "runtime/data/key_hash.h"

namespace bagua {
namespace {

constexpr char kMagic[8] = {'B', 'A', 'G', 'U', 'A', 'M', 'C', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kPage = 4096;
constexpr uint64_t kMinSlots = 64;
constexpr uint64_t kMinRingBytes = 16 * 1024;
constexpr uint64_t kAutoShardBytes = 64ULL << 20;
constexpr uint32_t kMaxShards = 256;
constexpr uint32_t kMaxAutoShards = 16;

struct SegmentHeader {
  char magic[8];
  uint32_t version;
  uint32_t shards;
  uint64_t shardStride;  // bytes from one shard's block to the next
  uint64_t slotCount;    // per shard
  uint64_t ringBytes;    // per shard
};
static_assert(sizeof(SegmentHeader) <= kPage);

uint64_t alignDown(uint64_t n, uint64_t a) { return n / a * a; }

}  // namespace

std::unique_ptr<MemoryCache> MemoryCache::create(uint64_t capacityBytes, uint32_t shards,
                                                 uint64_t meanEntryBytes) {
  BAGUA_ENFORCE(capacityBytes >= kMinCapacityBytes,
                "cache capacity " + std::to_string(capacityBytes) + " bytes is below the " +
                    std::to_string(kMinCapacityBytes) + " bytes a cache needs");
  BAGUA_ENFORCE(meanEntryBytes >= 64, "mean entry size " + std::to_string(meanEntryBytes) +
                                          " bytes is below 64 (a record's header and key)");
  if (shards == 0) {
    shards = static_cast<uint32_t>(
        std::clamp<uint64_t>(capacityBytes / kAutoShardBytes, 1, kMaxAutoShards));
  }
  BAGUA_ENFORCE(shards <= kMaxShards, "shard count " + std::to_string(shards) + " is above " +
                                          std::to_string(kMaxShards));
  const uint64_t perShard = alignDown((capacityBytes - kPage) / shards, kPage);
  const uint64_t entries = std::max<uint64_t>(perShard / meanEntryBytes, kMinSlots / 4 * 3);
  const uint64_t slots = std::max(kMinSlots, std::bit_ceil(entries * 4 / 3 + 1));
  const uint64_t index = CacheShard::bytesFor(slots, 0);  // header and slots
  BAGUA_ENFORCE(perShard >= index + kMinRingBytes,
                "cache capacity " + std::to_string(capacityBytes) + " bytes over " +
                    std::to_string(shards) + " shards leaves under " +
                    std::to_string(kMinRingBytes) + " bytes of data per shard");
  const uint64_t ring = alignDown(perShard - index, 8);

  SharedSegment segment = SharedSegment::create("bagua-cache", kPage + shards * perShard);
  auto* header = reinterpret_cast<SegmentHeader*>(segment.data());
  std::memcpy(header->magic, kMagic, sizeof(kMagic));
  header->version = kVersion;
  header->shards = shards;
  header->shardStride = perShard;
  header->slotCount = slots;
  header->ringBytes = ring;
  for (uint32_t s = 0; s < shards; ++s) {
    CacheShard::initialize(segment.data() + kPage + s * perShard);
  }
  return std::unique_ptr<MemoryCache>(new MemoryCache(std::move(segment)));
}

std::unique_ptr<MemoryCache> MemoryCache::attach(const std::string& path) {
  SharedSegment segment = SharedSegment::attach(path);
  const auto* header = reinterpret_cast<const SegmentHeader*>(segment.data());
  BAGUA_ENFORCE(segment.size() >= kPage && std::memcmp(header->magic, kMagic, 8) == 0 &&
                    header->version == kVersion,
                path + " is not a bagua memory cache (version " + std::to_string(kVersion) + ")");
  BAGUA_ENFORCE(
      header->shards > 0 && header->shards <= kMaxShards &&
          kPage + header->shards * header->shardStride <= segment.size() &&
          CacheShard::bytesFor(header->slotCount, header->ringBytes) <= header->shardStride,
      path + " holds a damaged cache layout");
  return std::unique_ptr<MemoryCache>(new MemoryCache(std::move(segment)));
}

MemoryCache::MemoryCache(SharedSegment segment) : segment_(std::move(segment)) {
  const auto* header = reinterpret_cast<const SegmentHeader*>(segment_.data());
  shards_.reserve(header->shards);
  for (uint32_t s = 0; s < header->shards; ++s) {
    shards_.emplace_back(segment_.data() + kPage + s * header->shardStride, header->slotCount,
                         header->ringBytes);
  }
}

bool MemoryCache::get(std::string_view key, const CacheValueSink& sink) {
  uint64_t hash = cacheKeyHash(key);
  return shardOf(hash).get(key, hash, sink);
}

CachePutResult MemoryCache::put(std::string_view key, std::string_view value) {
  uint64_t hash = cacheKeyHash(key);
  return shardOf(hash).put(key, hash, value);
}

void MemoryCache::clear() {
  for (auto& shard : shards_) shard.clear();
}

CacheShardCounters MemoryCache::stats() {
  CacheShardCounters total;
  for (auto& shard : shards_) {
    CacheShardCounters c = shard.counters();
    total.hits += c.hits;
    total.misses += c.misses;
    total.inserts += c.inserts;
    total.evictions += c.evictions;
    total.rejected += c.rejected;
    total.recoveries += c.recoveries;
    total.entries += c.entries;
    total.bytes += c.bytes;
  }
  return total;
}

uint64_t MemoryCache::maxValueBytes() const {
  const auto* header = reinterpret_cast<const SegmentHeader*>(segment_.data());
  return header->ringBytes - 24;  // one record header
}

}  // namespace bagua
