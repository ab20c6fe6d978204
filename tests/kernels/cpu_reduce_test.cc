// The collectives' CPU reductions (cpu_reduce.h): every integer dtype and op
// against a 64-bit reference wrapped to the type, wrap-around on overflow,
// float64 in double, fp16/bf16 through fp32, integer averages truncated
// toward zero, slices, aliasing, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu_reduce.h"
#include "kernels/float_bits.h"
#include "kernels/minmax_uint8.h"

namespace bagua::kernels {
namespace {

const ReduceOp kAllOps[] = {ReduceOp::kSum,     ReduceOp::kAvg,  ReduceOp::kMin, ReduceOp::kMax,
                            ReduceOp::kProduct, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};

// op(a, b) in 64 bits, wrapped to T the way two's complement does.
template <typename T>
T reference(ReduceOp op, T a, T b) {
  const int64_t x = a;
  const int64_t y = b;
  auto wrap = [](uint64_t v) { return static_cast<T>(v); };  // modular since C++20
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return wrap(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
    case ReduceOp::kProduct:
      return wrap(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
    case ReduceOp::kMin:
      return static_cast<T>(x < y ? x : y);
    case ReduceOp::kMax:
      return static_cast<T>(x > y ? x : y);
    case ReduceOp::kBand:
      return static_cast<T>(x & y);
    case ReduceOp::kBor:
      return static_cast<T>(x | y);
    case ReduceOp::kBxor:
      return static_cast<T>(x ^ y);
  }
  return 0;
}

// n values of T spread over the whole range (a 64-bit LCG), so sums and
// products overflow often.
template <typename T>
std::vector<T> values(size_t n, uint64_t seed) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] = static_cast<T>(seed >> 17);
  }
  return v;
}

template <typename T>
void checkIntegerOps(DType dtype) {
  const size_t n = 1001;
  const std::vector<T> a = values<T>(n, 1);
  const std::vector<T> b = values<T>(n, 2);
  for (ReduceOp op : kAllOps) {
    std::vector<T> out(n);
    reduceElementsCpu(dtype, op, out.data(), a.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], reference(op, a[i], b[i]))
          << dtypeName(dtype) << " " << reduceOpName(op) << " at " << i;
    }
    std::vector<T> inPlace = a;
    reduceElementsCpu(dtype, op, inPlace.data(), inPlace.data(), b.data(), n);
    EXPECT_EQ(inPlace, out) << "out may alias a";
  }
}

TEST(CpuReduce, EveryIntegerDtypeAndOpMatchesTheReference) {
  checkIntegerOps<int8_t>(DType::kInt8);
  checkIntegerOps<uint8_t>(DType::kUInt8);
  checkIntegerOps<int32_t>(DType::kInt32);
  checkIntegerOps<int64_t>(DType::kInt64);
}

TEST(CpuReduce, IntegerOverflowWrapsAround) {
  int8_t a8 = 100, b8 = 100, o8 = 0;
  reduceElementsCpu(DType::kInt8, ReduceOp::kSum, &o8, &a8, &b8, 1);
  EXPECT_EQ(o8, -56);
  uint8_t a = 200, b = 100, o = 0;
  reduceElementsCpu(DType::kUInt8, ReduceOp::kSum, &o, &a, &b, 1);
  EXPECT_EQ(o, 44);
  int64_t big = std::numeric_limits<int64_t>::max(), one = 1, o64 = 0;
  reduceElementsCpu(DType::kInt64, ReduceOp::kSum, &o64, &big, &one, 1);
  EXPECT_EQ(o64, std::numeric_limits<int64_t>::min());
  int32_t x = 65536, o32 = 0;
  reduceElementsCpu(DType::kInt32, ReduceOp::kProduct, &o32, &x, &x, 1);
  EXPECT_EQ(o32, 0);
}

TEST(CpuReduce, Float64IsComputedInDouble) {
  const std::vector<double> a = {0.1, 1e300, -2.5, 3.0};
  const std::vector<double> b = {0.2, 1e10, 4.0, -7.0};
  std::vector<double> out(4);
  reduceElementsCpu(DType::kFloat64, ReduceOp::kSum, out.data(), a.data(), b.data(), 4);
  EXPECT_EQ(out[0], 0.1 + 0.2);
  EXPECT_EQ(out[1], 1e300 + 1e10);
  reduceElementsCpu(DType::kFloat64, ReduceOp::kProduct, out.data(), a.data(), b.data(), 4);
  EXPECT_EQ(out[1], std::numeric_limits<double>::infinity());  // 1e310 overflows, as in double
  EXPECT_EQ(out[3], -21.0);
  reduceElementsCpu(DType::kFloat64, ReduceOp::kMin, out.data(), a.data(), b.data(), 4);
  EXPECT_EQ(out, (std::vector<double>{0.1, 1e10, -2.5, -7.0}));
}

TEST(CpuReduce, HalfTypesComputeInFloatAndRoundToNearestEven) {
  // 1025 * 3 = 3075 lies halfway between the fp16 values 3074 and 3076: the
  // even mantissa (3076) wins.
  std::vector<uint16_t> a = {floatToHalf(1025.0f), floatToHalf(3.0f), floatToHalf(60000.0f)};
  std::vector<uint16_t> b = {floatToHalf(3.0f), floatToHalf(-0.5f), floatToHalf(2.0f)};
  std::vector<uint16_t> out(3);
  reduceElementsCpu(DType::kFloat16, ReduceOp::kProduct, out.data(), a.data(), b.data(), 3);
  EXPECT_EQ(halfToFloat(out[0]), 3076.0f);
  EXPECT_EQ(halfToFloat(out[1]), -1.5f);
  EXPECT_EQ(out[2], 0x7c00u) << "120000 overflows fp16 to Inf";
  std::vector<uint16_t> c = {floatToBf16(256.0f), floatToBf16(-1.0f)};
  std::vector<uint16_t> d = {floatToBf16(1.0f), floatToBf16(2.0f)};
  std::vector<uint16_t> e(2);
  reduceElementsCpu(DType::kBFloat16, ReduceOp::kSum, e.data(), c.data(), d.data(), 2);
  EXPECT_EQ(bf16ToFloat(e[0]), 256.0f) << "257 rounds to even in bf16";
  reduceElementsCpu(DType::kBFloat16, ReduceOp::kMax, e.data(), c.data(), d.data(), 2);
  EXPECT_EQ(bf16ToFloat(e[1]), 2.0f);
}

TEST(CpuReduce, IntegerAverageTruncatesTowardZero) {
  std::vector<int32_t> i32 = {7, -7, 8, -1, 0};
  finishAverageCpu(DType::kInt32, i32.data(), i32.size(), 2);
  EXPECT_EQ(i32, (std::vector<int32_t>{3, -3, 4, 0, 0}));
  std::vector<int8_t> i8 = {-128, 127, -100};
  finishAverageCpu(DType::kInt8, i8.data(), i8.size(), 3);
  EXPECT_EQ(i8, (std::vector<int8_t>{-42, 42, -33}));
  std::vector<int8_t> many = {-100, 100};
  finishAverageCpu(DType::kInt8, many.data(), many.size(), 200);  // divisor beyond int8
  EXPECT_EQ(many, (std::vector<int8_t>{0, 0}));
  std::vector<uint8_t> u8 = {255, 3};
  finishAverageCpu(DType::kUInt8, u8.data(), u8.size(), 4);
  EXPECT_EQ(u8, (std::vector<uint8_t>{63, 0}));
  std::vector<int64_t> i64 = {-9, std::numeric_limits<int64_t>::min()};
  finishAverageCpu(DType::kInt64, i64.data(), i64.size(), 4);
  EXPECT_EQ(i64, (std::vector<int64_t>{-2, std::numeric_limits<int64_t>::min() / 4}));
}

TEST(CpuReduce, FloatAverageDivides) {
  std::vector<double> f64 = {7.0, -1.0};
  finishAverageCpu(DType::kFloat64, f64.data(), 2, 4);
  EXPECT_EQ(f64, (std::vector<double>{1.75, -0.25}));
  std::vector<float> f32 = {6.0f, -3.0f};
  finishAverageCpu(DType::kFloat32, f32.data(), 2, 3);
  EXPECT_EQ(f32, (std::vector<float>{2.0f, -1.0f}));
  std::vector<uint16_t> f16 = {floatToHalf(5.0f)};
  finishAverageCpu(DType::kFloat16, f16.data(), 1, 2);
  EXPECT_EQ(halfToFloat(f16[0]), 2.5f);
  std::vector<float> one = {5.0f};
  finishAverageCpu(DType::kFloat32, one.data(), 1, 1);
  EXPECT_EQ(one[0], 5.0f);
}

TEST(CpuReduce, SlicesReduceInOrderAndMayWriteSliceZero) {
  const size_t n = 5;
  const int nSlices = 4;
  std::vector<int32_t> slices(n * nSlices);
  for (size_t i = 0; i < slices.size(); ++i) slices[i] = static_cast<int32_t>(i * 3 + 1) - 20;
  for (ReduceOp op : kAllOps) {
    std::vector<int32_t> want(n);
    for (size_t i = 0; i < n; ++i) {
      int32_t acc = slices[i];
      for (int s = 1; s < nSlices; ++s) acc = reference(op, acc, slices[s * n + i]);
      want[i] = op == ReduceOp::kAvg ? acc / nSlices : acc;
    }
    std::vector<int32_t> out(n);
    reduceSlicesCpu(DType::kInt32, op, slices.data(), n, nSlices, out.data());
    EXPECT_EQ(out, want) << reduceOpName(op);
    std::vector<int32_t> inPlace = slices;
    reduceSlicesCpu(DType::kInt32, op, inPlace.data(), n, nSlices, inPlace.data());
    EXPECT_EQ(std::vector<int32_t>(inPlace.begin(), inPlace.begin() + n), want);
  }
  std::vector<float> one = {1.5f, 2.5f};
  std::vector<float> copy(2);
  reduceSlicesCpu(DType::kFloat32, ReduceOp::kAvg, one.data(), 2, 1, copy.data());
  EXPECT_EQ(copy, one);
}

TEST(CpuReduce, BitwiseOnAFloatDtypeIsRejectedNamingIt) {
  float a = 1, b = 2, out = 0;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    try {
      reduceElementsCpu(dtype, ReduceOp::kBor, &out, &a, &b, 1);
      FAIL() << dtypeName(dtype);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("bitwise reductions need an integer "
                                                       "dtype, got ") +
                                           dtypeName(dtype)),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(finishAverageCpu(DType::kInt32, &out, 1, 0), std::invalid_argument);
  EXPECT_THROW(reduceSlicesCpu(DType::kInt32, ReduceOp::kSum, &a, 1, 0, &out),
               std::invalid_argument);
}

TEST(CpuReduce, EmptyBuffersAreFine) {
  reduceElementsCpu(DType::kInt64, ReduceOp::kBxor, nullptr, nullptr, nullptr, 0);
  finishAverageCpu(DType::kFloat16, nullptr, 0, 3);
  reduceSlicesCpu(DType::kUInt8, ReduceOp::kMax, nullptr, 0, 4, nullptr);
}

TEST(QuantizationKernels, RejectTheNewDtypesNamingThem) {
  std::vector<uint8_t> buffer(256);
  for (DType dtype : {DType::kFloat64, DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64}) {
    try {
      reduceChunksCpu(dtype, buffer.data(), 4, 2, 0, false);
      FAIL() << dtypeName(dtype);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("dtype ") + dtypeName(dtype)),
                std::string::npos)
          << e.what();
    }
    EXPECT_THROW(compressCpu(dtype, buffer.data(), 4, 1, -1, buffer.data() + 64),
                 std::invalid_argument);
    EXPECT_THROW(decompressCpu(dtype, buffer.data(), 4, 1, buffer.data() + 128),
                 std::invalid_argument);
    EXPECT_THROW(addScaledCpu(dtype, buffer.data(), buffer.data(), buffer.data(), 4, 1.0f),
                 std::invalid_argument);
    EXPECT_THROW(scaleCpu(dtype, buffer.data(), 4, 2.0f), std::invalid_argument);
  }
}

}  // namespace
}  // namespace bagua::kernels
