// LAMB's hand-out order (kernels/optim/lamb_schedule.h): every block once
// in each pass; a batch's pass 2 after all of its pass 1, blocks reversed,
// with `lookahead` pass-1 blocks of the next batch between; errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/optim/lamb_schedule.h"
#include "kernels/optim/segments.h"

namespace bagua::kernels::optim {
namespace {

constexpr uint32_t P2 = kSecondPass;

TEST(LambSchedule, BatchesInOrderWithTheLookaheadBetween) {
  // Batches of 3, 2 and 4 blocks; lookahead 1.
  const std::vector<Batch> batches = {{0, 3, 0, 2}, {3, 2, 2, 1}, {5, 4, 3, 5}};
  const LambSchedule s = planLambSchedule(batches, 1);
  const std::vector<uint32_t> want = {0,      1,      2, 3, P2 | 2, P2 | 1, P2 | 0, 4,      5,
                                      P2 | 4, P2 | 3, 6, 7, 8,      P2 | 8, P2 | 7, P2 | 6, P2 | 5};
  EXPECT_EQ(s.items, want);
  EXPECT_EQ(s.blockBatch, (std::vector<uint32_t>{0, 0, 0, 1, 1, 2, 2, 2, 2}));
}

// The rules, on plans of mixed sizes and several lookaheads.
TEST(LambSchedule, EveryItemWaitsOnlyOnItemsBeforeIt) {
  std::vector<size_t> numel;
  for (size_t t = 0; t < 200; ++t) numel.push_back(1 + (t * 7919) % 30000);
  for (uint32_t lookahead : {0u, 1u, 7u, 100u, 100000u}) {
    const SegmentPlan plan = planSegments(numel, 1024, 20000);
    ASSERT_GT(plan.batches.size(), 10u);
    const LambSchedule s = planLambSchedule(plan.batches, lookahead);
    const size_t blocks = plan.blocks();
    ASSERT_EQ(s.items.size(), 2 * blocks);
    ASSERT_EQ(s.blockBatch.size(), blocks);
    std::vector<size_t> at[2];  // per pass and block: its position
    at[0].assign(blocks, SIZE_MAX);
    at[1].assign(blocks, SIZE_MAX);
    for (size_t k = 0; k < s.items.size(); ++k) {
      const int pass = (s.items[k] & P2) != 0;
      const uint32_t block = s.items[k] & ~P2;
      ASSERT_LT(block, blocks);
      ASSERT_EQ(at[pass][block], SIZE_MAX) << "block " << block << " twice in pass " << pass;
      at[pass][block] = k;
    }
    for (size_t b = 0; b < plan.batches.size(); ++b) {
      const Batch& batch = plan.batches[b];
      const uint32_t first = batch.firstBlock, last = first + batch.blocks - 1;
      for (uint32_t k = first; k <= last; ++k) ASSERT_EQ(s.blockBatch[k], b);
      for (uint32_t k = first; k < last; ++k) {
        ASSERT_LT(at[0][k], at[0][k + 1]) << "pass 1 in order";
        ASSERT_EQ(at[1][k + 1] + 1, at[1][k]) << "pass 2 reversed, together";
      }
      // Pass 2 after all of pass 1; between them, the lookahead.
      const size_t lastFirstPass = at[0][last];
      const size_t secondPass = at[1][last];
      ASSERT_LT(lastFirstPass, secondPass);
      if (b + 1 < plan.batches.size()) {
        const Batch& next = plan.batches[b + 1];
        size_t ahead = 0;
        for (uint32_t k = next.firstBlock; k < next.firstBlock + next.blocks; ++k) {
          ahead += at[0][k] < secondPass;
        }
        EXPECT_EQ(ahead, std::min<size_t>(lookahead, next.blocks)) << "batch " << b;
      }
    }
  }
}

TEST(LambSchedule, RejectsBlocksThatDoNotFitAnItem) {
  EXPECT_THROW(planLambSchedule({{0, 0x40000000u, 0, 1}, {0x40000000u, 0x40000000u, 1, 1}}, 0),
               std::invalid_argument);
  EXPECT_NO_THROW(planLambSchedule({}, 4));
}

}  // namespace
}  // namespace bagua::kernels::optim
