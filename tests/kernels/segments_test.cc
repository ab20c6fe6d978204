// Segment planning of the multi-tensor kernels (kernels/optim/segments.h):
// every element in exactly one segment, in order; no block over chunkElems;
// batches whole tensors within batchElems (or one large tensor); errors.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "kernels/optim/segments.h"

namespace bagua::kernels::optim {
namespace {

void checkPlan(const std::vector<size_t>& numel, size_t chunk, size_t batch) {
  const SegmentPlan plan = planSegments(numel, chunk, batch);
  ASSERT_EQ(plan.tensorBegin.size(), numel.size() + 1);
  // Segments of each tensor are contiguous, in order, and cover it exactly.
  for (size_t t = 0; t < numel.size(); ++t) {
    uint64_t next = 0;
    for (uint32_t s = plan.tensorBegin[t]; s < plan.tensorBegin[t + 1]; ++s) {
      ASSERT_EQ(plan.segTensor[s], t);
      ASSERT_EQ(plan.segOffset[s], next);
      ASSERT_GT(plan.segLength[s], 0u);
      next += plan.segLength[s];
    }
    ASSERT_EQ(next, numel[t]) << "tensor " << t;
  }
  // Blocks: consecutive segment ranges, each at most chunk elements, all full
  // but the last of a batch.
  ASSERT_EQ(plan.blockBegin.front(), 0u);
  ASSERT_EQ(plan.blockBegin.back(), plan.segTensor.size());
  std::vector<size_t> blockElems(plan.blocks());
  for (size_t b = 0; b < plan.blocks(); ++b) {
    for (uint32_t s = plan.blockBegin[b]; s < plan.blockBegin[b + 1]; ++s) {
      blockElems[b] += plan.segLength[s];
    }
    ASSERT_GT(blockElems[b], 0u);
    ASSERT_LE(blockElems[b], chunk);
  }
  // Batches: consecutive, whole tensors, at most batch elements unless one tensor.
  uint32_t block = 0, tensor = 0;
  for (const Batch& b : plan.batches) {
    ASSERT_EQ(b.firstBlock, block);
    ASSERT_EQ(b.firstTensor, tensor);
    size_t elems = 0;
    for (uint32_t t = b.firstTensor; t < b.firstTensor + b.tensors; ++t) elems += numel[t];
    if (batch > 0 && b.tensors > 1) {
      EXPECT_LE(elems, batch);
    }
    for (uint32_t k = b.firstBlock; k < b.firstBlock + b.blocks; ++k) {
      const uint32_t first = plan.segTensor[plan.blockBegin[k]];
      const uint32_t last = plan.segTensor[plan.blockBegin[k + 1] - 1];
      ASSERT_GE(first, b.firstTensor);
      ASSERT_LT(last, b.firstTensor + b.tensors);
      if (k + 1 < b.firstBlock + b.blocks) {
        EXPECT_EQ(blockElems[k], chunk);
      }
    }
    block += b.blocks;
    tensor += b.tensors;
  }
  EXPECT_EQ(block, plan.blocks());
  EXPECT_EQ(tensor, numel.size());
}

TEST(Segments, CoverEveryElementOnceWithinChunksAndBatches) {
  const std::vector<size_t> mixed = {1, 3, 64, 1000, 4097, 8192, 8193, 20000, 5, 70000, 2};
  for (size_t chunk : {1, 7, 64, 8192}) {
    for (size_t batch : {0, 1, 100, 30000}) checkPlan(mixed, chunk, batch);
  }
  std::vector<size_t> small(5000);
  for (size_t i = 0; i < small.size(); ++i) small[i] = 64 + (i * 37) % 4033;
  checkPlan(small, 8192, size_t{1} << 20);
  checkPlan({size_t{3} << 30}, 8192, 0);  // one tensor over 2^31 elements
}

TEST(Segments, BadArgumentsAreRefused) {
  EXPECT_THROW(planSegments({4, 0, 3}, 8192, 0), std::invalid_argument);
  EXPECT_THROW(planSegments({4}, 0, 0), std::invalid_argument);
  EXPECT_THROW(planSegments({4}, (size_t{1} << 31) + 1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace bagua::kernels::optim
