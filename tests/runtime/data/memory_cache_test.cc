// MemoryCache and CacheShard: values round-trip, replacement, FIFO eviction
// by bytes and by entry count, refusals, counters, attach by path, many
// threads and forked processes on the same keys, and recovery from a process
// that died holding a shard's lock.
#include "runtime/data/memory_cache.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "posix/child_process.h"
#include "runtime/common/error.h"

namespace bagua {
namespace {

using namespace std::chrono_literals;

std::optional<std::string> read(MemoryCache& cache, const std::string& key) {
  std::string out;
  bool found = cache.get(key, [&](size_t size) {
    out.resize(size);
    return reinterpret_cast<uint8_t*>(out.data());
  });
  return found ? std::optional<std::string>(out) : std::nullopt;
}

// A value that names its key and version, so a torn or misplaced read shows.
std::string valueFor(const std::string& key, int version, size_t size) {
  std::string v = key + "#" + std::to_string(version) + "#";
  while (v.size() < size) v += static_cast<char>('a' + (v.size() * 7 + version) % 26);
  v.resize(std::max(size, v.size()));
  return v;
}

bool wellFormed(const std::string& key, const std::string& value) {
  auto hash = value.find('#', key.size() + 1);
  if (value.compare(0, key.size() + 1, key + "#") != 0 || hash == std::string::npos) return false;
  int version = std::stoi(value.substr(key.size() + 1, hash - key.size() - 1));
  return value == valueFor(key, version, value.size());
}

TEST(MemoryCache, ValuesRoundTripAndMissesAreCounted) {
  auto cache = MemoryCache::create(1 << 20, 2);
  EXPECT_EQ(cache->shardCount(), 2u);
  EXPECT_FALSE(read(*cache, "a").has_value());
  std::string binary("\0\x01\xff\0zz", 6);
  EXPECT_EQ(cache->put("a", binary), CachePutResult::kStored);
  EXPECT_EQ(cache->put("empty", ""), CachePutResult::kStored);
  EXPECT_EQ(read(*cache, "a"), binary);
  EXPECT_EQ(read(*cache, "empty"), "");
  auto s = cache->stats();
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.inserts, 2u);
  EXPECT_EQ(s.entries, 2u);
}

TEST(MemoryCache, ReplacingAKeyKeepsOneLiveEntry) {
  auto cache = MemoryCache::create(1 << 20, 1);
  for (int v = 0; v < 100; ++v) cache->put("k", valueFor("k", v, 500));
  EXPECT_EQ(read(*cache, "k"), valueFor("k", 99, 500));
  auto s = cache->stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.evictions, 0u);  // dead records are reclaimed silently
}

TEST(MemoryCache, EvictsTheOldestFirstWhenFull) {
  auto cache = MemoryCache::create(256 << 10, 1, 64);  // one shard: FIFO order is global
  const size_t valueBytes = 1000;
  int inserted = 0;
  while (cache->stats().evictions == 0) {
    cache->put("k" + std::to_string(inserted),
               valueFor("k" + std::to_string(inserted), 0, valueBytes));
    ++inserted;
  }
  const int extra = 50;
  for (int i = 0; i < extra; ++i) {
    std::string key = "k" + std::to_string(inserted + i);
    cache->put(key, valueFor(key, 0, valueBytes));
  }
  auto s = cache->stats();
  EXPECT_EQ(s.entries + s.evictions, static_cast<uint64_t>(inserted + extra));
  EXPECT_LE(s.bytes, cache->capacityBytes());
  // The first evictions are exactly the first insertions; the newest survive.
  for (uint64_t i = 0; i < s.evictions; ++i) {
    EXPECT_FALSE(read(*cache, "k" + std::to_string(i)).has_value()) << i;
  }
  for (int i = static_cast<int>(s.evictions); i < inserted + extra; ++i) {
    std::string key = "k" + std::to_string(i);
    EXPECT_EQ(read(*cache, key), valueFor(key, 0, valueBytes)) << key;
  }
}

TEST(MemoryCache, TheIndexBoundsTheEntryCountOfSmallValues) {
  auto cache = MemoryCache::create(1 << 20, 1, 16 << 10);  // about 64 entries' worth of index
  for (int i = 0; i < 1000; ++i) cache->put("k" + std::to_string(i), "v");
  auto s = cache->stats();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_LT(s.entries, 200u);
  EXPECT_EQ(read(*cache, "k999"), "v");
}

TEST(MemoryCache, RefusesValuesLargerThanAShard) {
  auto cache = MemoryCache::create(256 << 10, 2);
  std::string big(cache->maxValueBytes() + 1, 'x');
  EXPECT_EQ(cache->put("big", big), CachePutResult::kTooLarge);
  EXPECT_EQ(cache->stats().rejected, 1u);
  EXPECT_FALSE(read(*cache, "big").has_value());
  std::string fits(cache->maxValueBytes() - 8, 'y');
  EXPECT_EQ(cache->put("y", fits), CachePutResult::kStored);
  EXPECT_EQ(read(*cache, "y"), fits);
}

TEST(MemoryCache, BadSizesAreRefusedWithTheValue) {
  try {
    MemoryCache::create(1000);
    FAIL() << "a 1000-byte cache was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("1000 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MemoryCache::create(1 << 20, 1000), InvalidArgument);
  EXPECT_THROW(MemoryCache::create(1 << 20, 0, 8), InvalidArgument);
  EXPECT_THROW(MemoryCache::attach("/nonexistent/cache"), InvalidArgument);
}

TEST(MemoryCache, AttachedByPathSharesTheEntries) {
  auto cache = MemoryCache::create(1 << 20);
  cache->put("shared", "yes");
  auto other = MemoryCache::attach(cache->attachPath());
  EXPECT_EQ(read(*other, "shared"), "yes");
  other->put("back", "too");
  EXPECT_EQ(read(*cache, "back"), "too");
}

// Threads replace overlapping keys while others read: every read is a whole
// value of its own key, and hits + misses equal the reads.
TEST(MemoryCache, ThreadsReadAndWriteOverlappingKeys) {
  auto cache = MemoryCache::create(128 << 10, 4, 256);  // small: evictions happen too
  constexpr int kThreads = 6, kOps = 4000, kKeys = 300;
  std::atomic<int> bad{0};
  std::atomic<uint64_t> reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        std::string key = "k" + std::to_string((i * 31 + t * 7) % kKeys);
        if ((i + t) % 3 == 0) {
          cache->put(key, valueFor(key, i, 100 + (i % 900)));
        } else {
          reads++;
          auto v = read(*cache, key);
          if (v && !wellFormed(key, *v)) bad++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  auto s = cache->stats();
  EXPECT_EQ(s.hits + s.misses, reads.load());
  EXPECT_GT(s.evictions, 0u);
}

// Forked processes (as DataLoader workers) share the mapping.
TEST(MemoryCache, ProcessesShareTheCache) {
  auto cache = MemoryCache::create(1 << 20, 4);
  std::vector<posix::ChildProcess> children;
  for (int p = 0; p < 3; ++p) {
    children.emplace_back([&, p] {
      int bad = 0;
      for (int i = 0; i < 2000; ++i) {
        std::string key = "k" + std::to_string((i * 13 + p) % 200);
        if (i % 2 == 0) {
          cache->put(key, valueFor(key, p * 10000 + i, 64 + i % 300));
        } else if (auto v = read(*cache, key); v && !wellFormed(key, *v)) {
          ++bad;
        }
      }
      return bad == 0 ? 0 : 1;
    });
  }
  for (auto& c : children) EXPECT_EQ(c.wait(60s), 0) << c.describeExit();
  EXPECT_EQ(cache->stats().inserts, 3000u);
  int found = 0;
  for (int k = 0; k < 200; ++k) {
    std::string key = "k" + std::to_string(k);
    if (auto v = read(*cache, key)) {
      EXPECT_TRUE(wellFormed(key, *v)) << key;
      ++found;
    }
  }
  EXPECT_EQ(found, 200);
}

// A process killed while holding a shard's lock: the next user recovers the
// shard (emptied, counted) instead of hanging; the other shard keeps its data.
TEST(MemoryCache, AProcessDyingUnderTheLockDoesNotHangTheOthers) {
  auto cache = MemoryCache::create(1 << 20, 2);
  constexpr int kKeys = 20;  // all on one shard of two: odds 2^-19
  for (int i = 0; i < kKeys; ++i) cache->put("k" + std::to_string(i), "before");
  posix::ChildProcess child([&] {
    auto attached = MemoryCache::attach(cache->attachPath());
    attached->get("k0", [](size_t) -> uint8_t* {
      ::_exit(0);  // called under the shard's lock: die holding it
    });
    return 2;
  });
  EXPECT_EQ(child.wait(30s), 0);
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(read(*cache, "k0").has_value());  // its shard was emptied
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  int kept = 0;
  for (int i = 1; i < kKeys; ++i) kept += read(*cache, "k" + std::to_string(i)) == "before";
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, kKeys - 1);
  EXPECT_EQ(cache->stats().recoveries, 1u);
  cache->put("k0", "after");
  EXPECT_EQ(read(*cache, "k0"), "after");
}

}  // namespace
}  // namespace bagua
