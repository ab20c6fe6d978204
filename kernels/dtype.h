// Element types the kernels and the runtime handle. Plain enum, no framework
// types: kernel entry points take raw pointers, sizes and a stream. The
// algorithms (quantization, chunk reduction) take the three float types only;
// plain collectives take every type.
#pragma once

#include <cstddef>

namespace bagua {

enum class DType { kFloat32, kFloat16, kBFloat16, kFloat64, kInt8, kUInt8, kInt32, kInt64 };

inline size_t dtypeSize(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kUInt8:
      return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
  }
  return 0;
}

inline const char* dtypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat64:
      return "float64";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
  }
  return "unknown";
}

// float32, float16, bfloat16: the types the algorithms and their kernels take.
inline bool isAlgorithmDType(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

// int8, uint8, int32, int64: the types bitwise reductions take.
inline bool isIntegerDType(DType dtype) {
  return dtype == DType::kInt8 || dtype == DType::kUInt8 || dtype == DType::kInt32 ||
         dtype == DType::kInt64;
}

}  // namespace bagua
