// Vocabulary of the communication layer: reductions and where buffers live.
#pragma once

#include "kernels/dtype.h"

namespace bagua {

enum class ReduceOp { kSum, kAvg, kMin, kMax };

enum class Device { kCpu, kCuda };

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
  }
  return "unknown";
}

}  // namespace bagua
