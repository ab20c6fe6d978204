// Bucket planning rules: registration order, one dtype per bucket, close at
// the size cap (never split a tensor), padding to the alignment.
#include <gtest/gtest.h>

#include "runtime/bucket/bucket_plan.h"
#include "runtime/common/error.h"

namespace bagua {
namespace {

TensorSpec spec(size_t numel, DType dtype = DType::kFloat32) {
  static float dummy;
  return TensorSpec{"t", &dummy, numel, dtype, Device::kCpu};
}

TEST(BucketPlan, ClosesAtTheCapWithoutSplittingTensors) {
  // 4-byte elements, 400-byte cap: 60 (240 B) + 60 -> 480 B, closed; 10 + 90
  // -> exactly 400 B, closed; 200 alone.
  auto buckets = planBuckets({spec(60), spec(60), spec(10), spec(90), spec(200)}, 400, 1);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].slots.size(), 2u);
  EXPECT_EQ(buckets[0].numel, 120u);
  EXPECT_EQ(buckets[1].slots.size(), 2u);
  EXPECT_EQ(buckets[1].slots[0].tensor, 2u);
  EXPECT_EQ(buckets[1].slots[1].offset, 10u);
  EXPECT_EQ(buckets[1].numel, 100u);
  EXPECT_EQ(buckets[2].slots[0].tensor, 4u);
}

TEST(BucketPlan, OneDtypePerBucketInRegistrationOrder) {
  auto buckets = planBuckets({spec(4), spec(4, DType::kFloat16), spec(4, DType::kFloat16), spec(4)},
                             1 << 20, 1);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].dtype, DType::kFloat32);
  EXPECT_EQ(buckets[1].dtype, DType::kFloat16);
  EXPECT_EQ(buckets[1].slots.size(), 2u);
  EXPECT_EQ(buckets[1].bytes(), 16u);
  EXPECT_EQ(buckets[2].dtype, DType::kFloat32);
}

TEST(BucketPlan, PadsToTheAlignmentAndKeepsEmptyTensors) {
  auto buckets = planBuckets({spec(0), spec(7), spec(0)}, 1 << 20, 4);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].slots.size(), 3u);
  EXPECT_EQ(buckets[0].numel, 7u);
  EXPECT_EQ(buckets[0].paddedNumel, 8u);
  auto empty = planBuckets({spec(0)}, 1 << 20, 3);
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].paddedNumel, 3u) << "an empty bucket still takes part in the collective";
}

TEST(BucketPlan, RejectsBadArguments) {
  EXPECT_THROW(planBuckets({spec(1)}, 0, 1), InvalidArgument);
  EXPECT_THROW(planBuckets({spec(1)}, 16, 0), InvalidArgument);
  TensorSpec gpu = spec(1);
  gpu.device = Device::kCuda;
  EXPECT_THROW(planBuckets({spec(1), gpu}, 16, 1), InvalidArgument);
}

TEST(BucketPlan, RejectsNonFloatTensorsNamingThem) {
  for (DType dtype : {DType::kFloat64, DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64}) {
    try {
      planBuckets({spec(1), spec(2, dtype)}, 16, 1);
      FAIL() << dtypeName(dtype) << " must be rejected";
    } catch (const InvalidArgument& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("tensor 1 (t)"), std::string::npos) << what;
      EXPECT_NE(what.find(std::string("dtype ") + dtypeName(dtype)), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace bagua

namespace bagua {
namespace {

TEST(DTypes, SupportedNamesParse) {
  EXPECT_EQ(parseDType("float32"), DType::kFloat32);
  EXPECT_EQ(parseDType("half"), DType::kFloat16);
  EXPECT_EQ(parseDType("bf16"), DType::kBFloat16);
  EXPECT_EQ(parseDType("float64"), DType::kFloat64);
  EXPECT_EQ(parseDType("int8"), DType::kInt8);
  EXPECT_EQ(parseDType("uint8"), DType::kUInt8);
  EXPECT_EQ(parseDType("int32"), DType::kInt32);
  EXPECT_EQ(parseDType("int64"), DType::kInt64);
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt8,
                  DType::kUInt8, DType::kInt32, DType::kInt64}) {
    EXPECT_EQ(parseDType(dtypeName(d)), d) << "dtypeName and parseDType agree";
  }
  EXPECT_EQ(dtypeSize(DType::kUInt8), 1u);
  EXPECT_EQ(dtypeSize(DType::kBFloat16), 2u);
  EXPECT_EQ(dtypeSize(DType::kInt32), 4u);
  EXPECT_EQ(dtypeSize(DType::kFloat64), 8u);
}

TEST(DTypes, UnsupportedDtypeIsAClearError) {
  try {
    parseDType("int16");
    FAIL() << "int16 must be rejected";
  } catch (const InvalidArgument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("unsupported dtype 'int16'"), std::string::npos) << what;
    EXPECT_NE(what.find("float64, int8, uint8, int32 and int64"), std::string::npos) << what;
  }
}

TEST(ReduceOps, NamesParseAndRoundTrip) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax,
                      ReduceOp::kProduct, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor}) {
    EXPECT_EQ(parseReduceOp(reduceOpName(op)), op);
  }
  EXPECT_EQ(parseReduceOp("mean"), ReduceOp::kAvg);
  try {
    parseReduceOp("land");
    FAIL() << "land must be rejected";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown reduce op 'land'"), std::string::npos);
  }
}

TEST(ReduceOps, BitwiseOnAFloatDtypeIsAClearError) {
  EXPECT_NO_THROW(requireReduction("allreduce", DType::kInt32, ReduceOp::kBxor));
  EXPECT_NO_THROW(requireReduction("allreduce", DType::kFloat32, ReduceOp::kProduct));
  try {
    requireReduction("allreduce", DType::kFloat32, ReduceOp::kBand);
    FAIL() << "band on float32 must be rejected";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("bitwise reductions need an integer dtype, got float32"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace bagua
