// Vocabulary of the communication layer: element types and reductions (from
// kernels/, re-exported here), where buffers live, and parsing of the names
// bindings pass.
#pragma once

#include <string>

#include "kernels/dtype.h"
#include "kernels/reduce_op.h"

namespace bagua {

enum class Device { kCpu, kCuda };

// Parses "float32"/"fp32"/"float", "float16"/"fp16"/"half",
// "bfloat16"/"bf16", "float64"/"fp64"/"double", "int8", "uint8",
// "int32"/"int", "int64"/"long" (what bindings pass); throws InvalidArgument
// naming the value and the supported types otherwise (e.g. "int16").
DType parseDType(const std::string& name);

// Parses "sum", "product"/"prod", "min", "max", "band", "bor", "bxor",
// "avg"/"mean"; throws InvalidArgument naming the value and the supported ops.
ReduceOp parseReduceOp(const std::string& name);

// Throws InvalidArgument unless `dtype` is float32, float16 or bfloat16, the
// types the algorithms (and their quantization kernels) take; `what` names
// the caller.
void requireAlgorithmDType(const std::string& what, DType dtype);

// Throws InvalidArgument unless `op` is defined on `dtype` ("bitwise
// reductions need an integer dtype, got float32"); `what` names the caller.
void requireReduction(const std::string& what, DType dtype, ReduceOp op);

}  // namespace bagua
