// See data_check.h. One multiply per word keeps fill and check near memory
// speed; they run outside the timed loop anyway.
#include "tools/bagua_net_perf/data_check.h"

#include <cstring>

namespace bagua::net_perf {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

uint64_t seedOf(int rank, uint64_t tag) {
  uint64_t x =
      (static_cast<uint64_t>(rank) + 1) * 0xBF58476D1CE4E5B9ull ^ tag * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline uint64_t wordAt(uint64_t seed, size_t index) { return seed ^ (index + 1) * kGolden; }

}  // namespace

uint64_t patternTag(size_t size, uint64_t i, bool timed) {
  return static_cast<uint64_t>(size) * 0x100000001ull + i + (timed ? (1ull << 62) : 0);
}

void fillPattern(char* data, size_t size, int rank, uint64_t tag) {
  uint64_t seed = seedOf(rank, tag);
  size_t words = size / 8;
  for (size_t w = 0; w < words; ++w) {
    uint64_t value = wordAt(seed, w);
    std::memcpy(data + w * 8, &value, 8);
  }
  uint64_t tail = wordAt(seed, words);
  std::memcpy(data + words * 8, &tail, size % 8);
}

uint64_t countWrongBytes(const char* data, size_t size, int rank, uint64_t tag) {
  uint64_t seed = seedOf(rank, tag);
  uint64_t wrong = 0;
  size_t words = size / 8;
  for (size_t w = 0; w <= words; ++w) {
    size_t n = w < words ? 8 : size % 8;
    uint64_t expected = wordAt(seed, w);
    uint64_t actual = 0;
    std::memcpy(&actual, data + w * 8, n);
    if (n < 8) expected &= (1ull << (8 * n)) - 1;
    uint64_t diff = actual ^ expected;
    for (; diff != 0; diff >>= 8) wrong += (diff & 0xff) != 0;
  }
  return wrong;
}

}  // namespace bagua::net_perf
