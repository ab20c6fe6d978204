// CPU element-wise reductions (cpu_reduce.h): one loop per (dtype, op), the
// op chosen outside the loop so each loop is a plain vectorizable one.
#include "kernels/cpu_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/float_bits.h"

namespace bagua::kernels {
namespace {

// Elements stored and computed as T (float, double, integers).
template <typename T>
struct Native {
  using Stored = T;
  using Value = T;
  static constexpr bool kInteger = std::is_integral_v<T>;
  static Value load(Stored s) { return s; }
  static Stored store(Value v) { return v; }
};

// fp16 / bf16 bits computed in fp32.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
struct Widened {
  using Stored = uint16_t;
  using Value = float;
  static constexpr bool kInteger = false;
  static Value load(Stored s) { return ToFloat(s); }
  static Stored store(Value v) { return FromFloat(v); }
};

using Half = Widened<halfToFloat, floatToHalf>;
using BFloat = Widened<bf16ToFloat, floatToBf16>;

// a + b and a * b; integers wrap through their unsigned type (no signed
// overflow, which C++ leaves undefined).
template <typename V>
V add(V a, V b) {
  if constexpr (std::is_integral_v<V>) {
    using U = std::make_unsigned_t<V>;
    return static_cast<V>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <typename V>
V multiply(V a, V b) {
  if constexpr (std::is_integral_v<V>) {
    using U = std::make_unsigned_t<V>;
    return static_cast<V>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

template <typename E, typename F>
void zip(void* out, const void* a, const void* b, size_t n, F f) {
  using S = typename E::Stored;
  auto* o = static_cast<S*>(out);
  const auto* x = static_cast<const S*>(a);
  const auto* y = static_cast<const S*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = E::store(f(E::load(x[i]), E::load(y[i])));
}

template <typename E>
void reduceTyped(ReduceOp op, void* out, const void* a, const void* b, size_t n) {
  using V = typename E::Value;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return zip<E>(out, a, b, n, [](V x, V y) { return add(x, y); });
    case ReduceOp::kProduct:
      return zip<E>(out, a, b, n, [](V x, V y) { return multiply(x, y); });
    case ReduceOp::kMin:
      return zip<E>(out, a, b, n, [](V x, V y) { return std::min(x, y); });
    case ReduceOp::kMax:
      return zip<E>(out, a, b, n, [](V x, V y) { return std::max(x, y); });
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      break;
  }
  if constexpr (E::kInteger) {  // float dtypes were rejected by checkReduction
    switch (op) {
      case ReduceOp::kBand:
        return zip<E>(out, a, b, n, [](V x, V y) { return static_cast<V>(x & y); });
      case ReduceOp::kBor:
        return zip<E>(out, a, b, n, [](V x, V y) { return static_cast<V>(x | y); });
      case ReduceOp::kBxor:
        return zip<E>(out, a, b, n, [](V x, V y) { return static_cast<V>(x ^ y); });
      default:
        return;
    }
  }
}

// Calls fn(Traits{}) with the element traits of dtype.
template <typename Fn>
void dispatch(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(Native<float>{});
    case DType::kFloat16:
      return fn(Half{});
    case DType::kBFloat16:
      return fn(BFloat{});
    case DType::kFloat64:
      return fn(Native<double>{});
    case DType::kInt8:
      return fn(Native<int8_t>{});
    case DType::kUInt8:
      return fn(Native<uint8_t>{});
    case DType::kInt32:
      return fn(Native<int32_t>{});
    case DType::kInt64:
      return fn(Native<int64_t>{});
  }
  throw std::invalid_argument("bagua::kernels: unknown dtype " +
                              std::to_string(static_cast<int>(dtype)));
}

template <typename E>
void averageTyped(void* data, size_t n, int ranks) {
  using S = typename E::Stored;
  using V = typename E::Value;
  auto* d = static_cast<S*>(data);
  if constexpr (std::is_integral_v<V>) {
    // In 64 bits, so the divisor fits whatever the type; `/` truncates toward zero.
    using W = std::conditional_t<std::is_signed_v<V>, int64_t, uint64_t>;
    const W divisor = static_cast<W>(ranks);
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<V>(static_cast<W>(d[i]) / divisor);
  } else if constexpr (std::is_same_v<V, double>) {
    const double divisor = ranks;
    for (size_t i = 0; i < n; ++i) d[i] = d[i] / divisor;
  } else {
    const float factor = 1.0f / static_cast<float>(ranks);
    for (size_t i = 0; i < n; ++i) d[i] = E::store(E::load(d[i]) * factor);
  }
}

}  // namespace

void checkReduction(const char* what, DType dtype, ReduceOp reduceOp) {
  if (dtypeSize(dtype) == 0) {
    throw std::invalid_argument(std::string("bagua::kernels::") + what + ": unknown dtype " +
                                std::to_string(static_cast<int>(dtype)));
  }
  if (!reductionSupported(dtype, reduceOp)) {
    throw std::invalid_argument(
        std::string("bagua::kernels::") + what + ": " + reduceOpName(reduceOp) +
        ": bitwise reductions need an integer dtype, got " + dtypeName(dtype));
  }
}

void reduceElementsCpu(DType dtype, ReduceOp op, void* out, const void* a, const void* b,
                       size_t n) {
  checkReduction("reduceElementsCpu", dtype, op);
  dispatch(dtype, [&](auto e) { reduceTyped<decltype(e)>(op, out, a, b, n); });
}

void finishAverageCpu(DType dtype, void* data, size_t n, int ranks) {
  if (ranks < 1) {
    throw std::invalid_argument(
        "bagua::kernels::finishAverageCpu: ranks = " + std::to_string(ranks) + ", expected >= 1");
  }
  if (ranks == 1) return;
  dispatch(dtype, [&](auto e) { averageTyped<decltype(e)>(data, n, ranks); });
}

void reduceSlicesCpu(DType dtype, ReduceOp op, const void* slices, size_t n, int nSlices,
                     void* out) {
  checkReduction("reduceSlicesCpu", dtype, op);
  if (nSlices < 1) {
    throw std::invalid_argument("bagua::kernels::reduceSlicesCpu: nSlices = " +
                                std::to_string(nSlices) + ", expected >= 1");
  }
  if (n == 0) return;
  const size_t bytes = n * dtypeSize(dtype);
  const auto* in = static_cast<const uint8_t*>(slices);
  if (out != slices) std::memcpy(out, in, bytes);
  for (int s = 1; s < nSlices; ++s) {
    reduceElementsCpu(dtype, op, out, out, in + static_cast<size_t>(s) * bytes, n);
  }
  if (op == ReduceOp::kAvg) finishAverageCpu(dtype, out, n, nSlices);
}

}  // namespace bagua::kernels
