// CPU element-wise reductions.
#include "runtime/comm/cpu_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/float_bits.h"

namespace bagua {
namespace {

float combine(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return a + b;
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
  }
  return a;
}

template <typename Load, typename Store>
void reduceWith(ReduceOp op, void* out, const void* a, const void* b, size_t n, Load load,
                Store store) {
  for (size_t i = 0; i < n; ++i) store(out, i, combine(op, load(a, i), load(b, i)));
}

}  // namespace

void reduceElements(DType dtype, ReduceOp op, void* out, const void* a, const void* b, size_t n) {
  switch (dtype) {
    case DType::kFloat32: {
      auto* o = static_cast<float*>(out);
      const auto* x = static_cast<const float*>(a);
      const auto* y = static_cast<const float*>(b);
      for (size_t i = 0; i < n; ++i) o[i] = combine(op, x[i], y[i]);
      return;
    }
    case DType::kFloat16:
      reduceWith(
          op, out, a, b, n,
          [](const void* p, size_t i) {
            return kernels::halfToFloat(static_cast<const uint16_t*>(p)[i]);
          },
          [](void* p, size_t i, float v) {
            static_cast<uint16_t*>(p)[i] = kernels::floatToHalf(v);
          });
      return;
    case DType::kBFloat16:
      reduceWith(
          op, out, a, b, n,
          [](const void* p, size_t i) {
            return kernels::bf16ToFloat(static_cast<const uint16_t*>(p)[i]);
          },
          [](void* p, size_t i, float v) {
            static_cast<uint16_t*>(p)[i] = kernels::floatToBf16(v);
          });
      return;
  }
}

void scaleElements(DType dtype, void* data, size_t n, float factor) {
  switch (dtype) {
    case DType::kFloat32: {
      auto* d = static_cast<float*>(data);
      for (size_t i = 0; i < n; ++i) d[i] *= factor;
      return;
    }
    case DType::kFloat16: {
      auto* d = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < n; ++i)
        d[i] = kernels::floatToHalf(kernels::halfToFloat(d[i]) * factor);
      return;
    }
    case DType::kBFloat16: {
      auto* d = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < n; ++i)
        d[i] = kernels::floatToBf16(kernels::bf16ToFloat(d[i]) * factor);
      return;
    }
  }
}

}  // namespace bagua
