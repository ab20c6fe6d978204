// Vocabulary of the communication layer: reductions and where buffers live.
#pragma once

#include <string>

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

// Parses "float32"/"fp32"/"float", "float16"/"fp16"/"half",
// "bfloat16"/"bf16" (what bindings pass); throws InvalidArgument naming the
// value and the supported types otherwise (e.g. "int64", "float64").
DType parseDType(const std::string& name);

}  // namespace bagua
