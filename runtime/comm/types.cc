// Parsing of dtype and reduce-op names, and the checks on them.
#include "runtime/comm/types.h"

#include "runtime/common/error.h"

namespace bagua {

DType parseDType(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "float") return DType::kFloat32;
  if (name == "float16" || name == "fp16" || name == "half") return DType::kFloat16;
  if (name == "bfloat16" || name == "bf16") return DType::kBFloat16;
  if (name == "float64" || name == "fp64" || name == "double") return DType::kFloat64;
  if (name == "int8") return DType::kInt8;
  if (name == "uint8") return DType::kUInt8;
  if (name == "int32" || name == "int") return DType::kInt32;
  if (name == "int64" || name == "long") return DType::kInt64;
  BAGUA_THROW(InvalidArgument, "unsupported dtype '" + name +
                                   "': Bagua communicates float32, float16, bfloat16, float64, "
                                   "int8, uint8, int32 and int64 tensors");
}

ReduceOp parseReduceOp(const std::string& name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "product" || name == "prod") return ReduceOp::kProduct;
  if (name == "min") return ReduceOp::kMin;
  if (name == "max") return ReduceOp::kMax;
  if (name == "band") return ReduceOp::kBand;
  if (name == "bor") return ReduceOp::kBor;
  if (name == "bxor") return ReduceOp::kBxor;
  if (name == "avg" || name == "mean") return ReduceOp::kAvg;
  BAGUA_THROW(InvalidArgument,
              "unknown reduce op '" + name + "' (sum, product, min, max, band, bor, bxor, avg)");
}

void requireAlgorithmDType(const std::string& what, DType dtype) {
  BAGUA_ENFORCE(isAlgorithmDType(dtype),
                what + ": dtype " + dtypeName(dtype) +
                    " is not supported; the algorithms communicate float32, float16 and "
                    "bfloat16 tensors only");
}

void requireReduction(const std::string& what, DType dtype, ReduceOp op) {
  BAGUA_ENFORCE(dtypeSize(dtype) != 0,
                what + ": unknown dtype " + std::to_string(static_cast<int>(dtype)));
  BAGUA_ENFORCE(reductionSupported(dtype, op),
                what + ": " + reduceOpName(op) +
                    ": bitwise reductions need an integer dtype, got " + dtypeName(dtype));
}

}  // namespace bagua
