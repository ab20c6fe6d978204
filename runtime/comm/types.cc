// DType parsing for bindings and configuration.
#include "runtime/comm/types.h"

#include "runtime/common/error.h"

namespace bagua {

DType parseDType(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "float") return DType::kFloat32;
  if (name == "float16" || name == "fp16" || name == "half") return DType::kFloat16;
  if (name == "bfloat16" || name == "bf16") return DType::kBFloat16;
  BAGUA_THROW(InvalidArgument, "unsupported dtype '" + name +
                                   "': Bagua communicates float32, float16 and bfloat16 tensors");
}

}  // namespace bagua
