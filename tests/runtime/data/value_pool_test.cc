// ValuePool: a released buffer of a size comes back for that size, small
// values bypass the pool, the free bytes stay under the bound, and buffers
// may outlive the last handle on the pool.
#include "runtime/data/value_pool.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace bagua {
namespace {

constexpr size_t kBig = 256 * 1024;

TEST(ValuePool, AReleasedBufferIsReusedForItsSize) {
  auto pool = ValuePool::create(1 << 20);
  char* first = nullptr;
  {
    auto a = pool->take(kBig);
    first = a.get();
  }
  EXPECT_EQ(pool->freeBytes(), kBig);
  auto other = pool->take(kBig + 8);  // another size: a new buffer
  EXPECT_NE(other.get(), first);
  auto again = pool->take(kBig);
  EXPECT_EQ(again.get(), first);
  EXPECT_EQ(pool->freeBytes(), 0u);
}

TEST(ValuePool, SmallValuesAndBuffersPastTheBoundAreNotKept) {
  auto pool = ValuePool::create(2 * kBig);
  { auto small = pool->take(ValuePool::kMinPooledBytes - 1); }
  EXPECT_EQ(pool->freeBytes(), 0u);
  {
    std::vector<std::shared_ptr<char[]>> held;
    for (int i = 0; i < 5; ++i) held.push_back(pool->take(kBig));
  }
  EXPECT_EQ(pool->freeBytes(), 2 * kBig);
}

TEST(ValuePool, BuffersOutliveThePoolHandleAndThreadsReleaseThem) {
  std::shared_ptr<char[]> kept;
  {
    auto pool = ValuePool::create(1 << 20);
    kept = pool->take(kBig);
  }
  kept[kBig - 1] = 'x';  // still valid: the buffer holds the pool
  std::vector<std::thread> threads;
  auto pool = ValuePool::create(64 << 20);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        auto b = pool->take(kBig);
        b[0] = static_cast<char>(i);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(pool->freeBytes(), 4 * kBig);
  EXPECT_GE(pool->freeBytes(), kBig);
}

}  // namespace
}  // namespace bagua
