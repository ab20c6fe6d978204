// Inputs and expected results of the collective tests (collective_values.h).
#include "tests/runtime/collective_values.h"

#include <cstring>
#include <string>

#include "kernels/float_bits.h"

namespace bagua::testing {

std::vector<DType> allDTypes() {
  return {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
          DType::kInt8,    DType::kUInt8,   DType::kInt32,    DType::kInt64};
}

std::vector<ReduceOp> opsFor(DType dtype) {
  std::vector<ReduceOp> ops = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax,
                               ReduceOp::kProduct};
  if (isIntegerDType(dtype)) {
    ops.insert(ops.end(), {ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor});
  }
  return ops;
}

int64_t inputValue(DType dtype, ReduceOp op, int rank, size_t i) {
  if (op == ReduceOp::kAvg && !isIntegerDType(dtype)) {
    return 2 * rank + static_cast<int64_t>(i % 3) - 2;
  }
  // Distinct per rank for up to 7 ranks, so products stay small (<= 360).
  const int64_t v = (rank * 5 + static_cast<int64_t>(i) * 3) % 7;
  return dtype == DType::kUInt8 ? v : v - 3;
}

namespace {

int64_t wrapTo(DType dtype, int64_t v) {
  switch (dtype) {
    case DType::kInt8:
      return static_cast<int8_t>(v);
    case DType::kUInt8:
      return static_cast<uint8_t>(v);
    case DType::kInt32:
      return static_cast<int32_t>(v);
    default:
      return v;
  }
}

int64_t combine(ReduceOp op, int64_t a, int64_t b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return a + b;
    case ReduceOp::kProduct:
      return a * b;
    case ReduceOp::kMin:
      return a < b ? a : b;
    case ReduceOp::kMax:
      return a > b ? a : b;
    case ReduceOp::kBand:
      return a & b;
    case ReduceOp::kBor:
      return a | b;
    case ReduceOp::kBxor:
      return a ^ b;
  }
  return 0;
}

}  // namespace

double expectedValue(DType dtype, ReduceOp op, int size, size_t i) {
  int64_t acc = inputValue(dtype, op, 0, i);
  for (int r = 1; r < size; ++r) acc = combine(op, acc, inputValue(dtype, op, r, i));
  acc = wrapTo(dtype, acc);
  if (op != ReduceOp::kAvg) return static_cast<double>(acc);
  if (isIntegerDType(dtype)) return static_cast<double>(acc / size);  // toward zero
  return static_cast<double>(acc) / size;
}

double loadValue(DType dtype, const void* data, size_t i) {
  const auto* p = static_cast<const uint8_t*>(data) + i * dtypeSize(dtype);
  auto read = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (dtype) {
    case DType::kFloat32:
      return read(float{});
    case DType::kFloat16:
      return kernels::halfToFloat(read(uint16_t{}));
    case DType::kBFloat16:
      return kernels::bf16ToFloat(read(uint16_t{}));
    case DType::kFloat64:
      return read(double{});
    case DType::kInt8:
      return read(int8_t{});
    case DType::kUInt8:
      return read(uint8_t{});
    case DType::kInt32:
      return read(int32_t{});
    case DType::kInt64:
      return static_cast<double>(read(int64_t{}));
  }
  return 0;
}

void storeValue(DType dtype, void* data, size_t i, double v) {
  auto* p = static_cast<uint8_t*>(data) + i * dtypeSize(dtype);
  auto write = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (dtype) {
    case DType::kFloat32:
      return write(static_cast<float>(v));
    case DType::kFloat16:
      return write(kernels::floatToHalf(static_cast<float>(v)));
    case DType::kBFloat16:
      return write(kernels::floatToBf16(static_cast<float>(v)));
    case DType::kFloat64:
      return write(v);
    case DType::kInt8:
      return write(static_cast<int8_t>(v));
    case DType::kUInt8:
      return write(static_cast<uint8_t>(v));
    case DType::kInt32:
      return write(static_cast<int32_t>(v));
    case DType::kInt64:
      return write(static_cast<int64_t>(v));
  }
}

std::vector<uint8_t> inputBuffer(DType dtype, ReduceOp op, int rank, size_t n) {
  std::vector<uint8_t> bytes(n * dtypeSize(dtype));
  for (size_t i = 0; i < n; ++i) {
    storeValue(dtype, bytes.data(), i, static_cast<double>(inputValue(dtype, op, rank, i)));
  }
  return bytes;
}

std::string checkReduction(DType dtype, ReduceOp op, int size, const void* data, size_t n,
                           size_t first) {
  for (size_t i = 0; i < n; ++i) {
    const double want = expectedValue(dtype, op, size, first + i);
    const double got = loadValue(dtype, data, i);
    if (got != want) {
      return std::string(dtypeName(dtype)) + " " + reduceOpName(op) + " element " +
             std::to_string(first + i) + ": got " + std::to_string(got) + ", want " +
             std::to_string(want);
    }
  }
  return "";
}

}  // namespace bagua::testing
