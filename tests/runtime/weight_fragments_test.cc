// WeightFragments and SyncSchedule: how local SGD and DiLoCo split the
// weights (whole tensors, about equal sizes, every fragment non-empty) and
// when each fragment syncs.
#include "runtime/algorithms/weight_fragments.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/common/error.h"

namespace bagua {
namespace {

std::vector<TensorSpec> tensors(const std::vector<size_t>& sizes, DType dtype = DType::kFloat32) {
  static float storage[1];
  std::vector<TensorSpec> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    out.push_back(TensorSpec{"t" + std::to_string(i), storage, sizes[i], dtype, Device::kCpu});
  }
  return out;
}

std::vector<std::vector<size_t>> tensorsPerFragment(const WeightFragments& w) {
  std::vector<std::vector<size_t>> out(w.fragments());
  for (size_t f = 0; f < w.fragments(); ++f) {
    for (size_t b : w.bucketsOf(f)) {
      for (const BucketSlot& s : w.buckets()[b].slots) out[f].push_back(s.tensor);
    }
  }
  return out;
}

TEST(WeightFragments, AnMlpSplitsIntoItsLayers) {
  // 3 x (Linear(4096, 4096) weight, bias): the 50M-parameter benchmark model.
  WeightFragments w(tensors({4096 * 4096, 4096, 4096 * 4096, 4096, 4096 * 4096, 4096}), 3,
                    10u << 20, 4, "diloco");
  EXPECT_THAT(tensorsPerFragment(w),
              ::testing::ElementsAre(::testing::ElementsAre(0, 1), ::testing::ElementsAre(2, 3),
                                     ::testing::ElementsAre(4, 5)));
  for (size_t f = 0; f < 3; ++f) EXPECT_EQ(w.fragmentElements(f), 4096u * 4097u);
  for (const BucketLayout& b : w.buckets()) EXPECT_EQ(b.paddedNumel % 4, 0u);
}

TEST(WeightFragments, EveryFragmentGetsATensorEvenWhenOneDominates) {
  WeightFragments w(tensors({1000000, 1, 1, 1}), 4, 1u << 30, 1, "diloco");
  EXPECT_THAT(tensorsPerFragment(w),
              ::testing::ElementsAre(::testing::ElementsAre(0), ::testing::ElementsAre(1),
                                     ::testing::ElementsAre(2), ::testing::ElementsAre(3)));
  WeightFragments tail(tensors({1, 1, 1, 1000000}), 2, 1u << 30, 1, "diloco");
  EXPECT_THAT(tensorsPerFragment(tail),
              ::testing::ElementsAre(::testing::ElementsAre(0, 1, 2), ::testing::ElementsAre(3)));
}

TEST(WeightFragments, OneFragmentIsEveryTensorInBuckets) {
  WeightFragments w(tensors({300, 300, 300}), 1, 1000 * 4, 1, "local_sgd");
  EXPECT_EQ(w.fragments(), 1u);
  EXPECT_EQ(w.bucketsOf(0).size(), 1u);  // a bucket may overshoot by its last tensor
  EXPECT_EQ(w.fragmentElements(0), 900u);
}

TEST(WeightFragments, TooManyFragmentsNamesTheArgument) {
  try {
    WeightFragments w(tensors({10, 10}), 3, 1024, 1, "diloco");
    FAIL() << "3 fragments of 2 tensors accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("diloco: fragments (3) is larger than the number "
                                               "of parameter tensors (2)"));
  }
  EXPECT_THROW(WeightFragments(tensors({10}), 0, 1024, 1, "diloco"), InvalidArgument);
}

TEST(SyncSchedule, FragmentsTakeTurnsHOverFStepsApart) {
  SyncSchedule s{50, 3};
  EXPECT_EQ(s.offset(0), 16);
  EXPECT_EQ(s.offset(1), 33);
  EXPECT_EQ(s.offset(2), 50);
  std::vector<int64_t> steps;
  for (int64_t t = 1; t <= 120; ++t) {
    if (s.syncs(1, t)) steps.push_back(t);
  }
  EXPECT_THAT(steps, ::testing::ElementsAre(33, 83));
  SyncSchedule every{4, 1};
  for (int64_t t = 1; t <= 12; ++t) EXPECT_EQ(every.syncs(0, t), t % 4 == 0) << t;
}

}  // namespace
}  // namespace bagua
