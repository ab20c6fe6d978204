// Element-wise reduction operators of the collectives, next to DType so the
// CPU and CUDA reductions in kernels/ can take them (runtime/comm/types.h
// re-exports them). Bitwise operators need an integer dtype; kAvg is a sum
// divided by the number of ranks (integers: truncated toward zero).
#pragma once

#include "kernels/dtype.h"

namespace bagua {

enum class ReduceOp { kSum, kAvg, kMin, kMax, kProduct, kBand, kBor, kBxor };

inline const char* reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kProduct:
      return "product";
    case ReduceOp::kBand:
      return "band";
    case ReduceOp::kBor:
      return "bor";
    case ReduceOp::kBxor:
      return "bxor";
  }
  return "unknown";
}

inline bool isBitwiseOp(ReduceOp op) {
  return op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
}

// Whether `op` is defined on `dtype` (every op on integers; all but the
// bitwise ones on floats).
inline bool reductionSupported(DType dtype, ReduceOp op) {
  return !isBitwiseOp(op) || isIntegerDType(dtype);
}

}  // namespace bagua
