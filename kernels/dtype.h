// Element types the kernels and the runtime handle. Plain enum, no framework
// types: kernel entry points take raw pointers, sizes and a stream.
#pragma once

#include <cstddef>

namespace bagua {

enum class DType { kFloat32, kFloat16, kBFloat16 };

inline size_t dtypeSize(DType dtype) { return dtype == DType::kFloat32 ? 4 : 2; }

inline const char* dtypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

}  // namespace bagua
