// shift_one's pairing: a perfect matching every step (odd worlds: one rank
// sits out), symmetric, and rotating so that every cross-half pair meets.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "runtime/algorithms/decentralized.h"

namespace bagua {
namespace {

class ShiftOne : public ::testing::TestWithParam<int> {};

TEST_P(ShiftOne, EveryStepIsASymmetricMatching) {
  const int n = GetParam();
  for (size_t step = 0; step < 12; ++step) {
    int alone = 0;
    for (int r = 0; r < n; ++r) {
      int p = Decentralized::shiftOnePeer(r, n, step);
      ASSERT_GE(p, 0);
      ASSERT_LT(p, n);
      EXPECT_EQ(Decentralized::shiftOnePeer(p, n, step), r) << "n=" << n << " step=" << step;
      if (p == r) ++alone;
    }
    EXPECT_EQ(alone, n == 1 ? 1 : n % 2) << "n=" << n << " step=" << step;
  }
}

TEST_P(ShiftOne, RotatesThroughEveryPeerOfTheOtherHalf) {
  const int n = GetParam();
  if (n < 2) GTEST_SKIP();
  const int half = (n + 1) / 2;
  std::set<std::pair<int, int>> met;
  for (size_t step = 0; step < static_cast<size_t>(half); ++step) {
    for (int r = 0; r < n; ++r) met.insert({r, Decentralized::shiftOnePeer(r, n, step)});
  }
  for (int r = 0; r < half && r < n; ++r) {
    for (int q = half; q < n; ++q) EXPECT_TRUE(met.count({r, q})) << r << " never met " << q;
  }
}

TEST(ShiftOneOriginal, MatchesBaguasFormulaForEvenWorlds) {
  // peer = n/2 + ((r + s) mod n/2) for r < n/2, (r - n/2 - s) mod n/2 otherwise.
  for (int n : {2, 4, 8}) {
    int h = n / 2;
    for (size_t s = 0; s < 5; ++s) {
      for (int r = 0; r < n; ++r) {
        int want = r < h ? h + (r + static_cast<int>(s)) % h
                         : (((r - h - static_cast<int>(s)) % h) + h) % h;
        EXPECT_EQ(Decentralized::shiftOnePeer(r, n, s), want);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, ShiftOne, ::testing::Values(1, 2, 3, 4, 5, 7, 8));

}  // namespace
}  // namespace bagua
