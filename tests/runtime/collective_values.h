// Inputs and expected results of the collective tests, shared by the Gloo
// (multiproc) and NCCL (gpu) suites: every rank's input is a small integer,
// so every dtype holds it exactly, and the expected reduction is folded in
// 64 bits and wrapped to the dtype (integers) or exact (floats).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/comm/types.h"

namespace bagua::testing {

// Every DType, and every ReduceOp valid on `dtype` (all but the bitwise ones
// on floats).
std::vector<DType> allDTypes();
std::vector<ReduceOp> opsFor(DType dtype);

// Rank r's element i for a reduction with `op`: in [-3, 3] (signed types) or
// [0, 6] (uint8); for kAvg on floats, 2r + i % 3 - 2 (the sum is a multiple
// of the rank count, so the float average is exact).
int64_t inputValue(DType dtype, ReduceOp op, int rank, size_t i);

// The reduction over `size` ranks of element i: folded in 64 bits, wrapped
// to the dtype; kAvg divides the wrapped sum truncating toward zero.
double expectedValue(DType dtype, ReduceOp op, int size, size_t i);

// n elements of rank r's input, as dtype bytes.
std::vector<uint8_t> inputBuffer(DType dtype, ReduceOp op, int rank, size_t n);

// Element i of a dtype buffer (fp16/bf16 widened), and v stored as dtype.
double loadValue(DType dtype, const void* data, size_t i);
void storeValue(DType dtype, void* data, size_t i, double v);

// "" when the n elements at data are the expected reduction over `size`
// ranks (element i of the data is the reduction's element first + i), else
// the first mismatch.
std::string checkReduction(DType dtype, ReduceOp op, int size, const void* data, size_t n,
                           size_t first = 0);

}  // namespace bagua::testing
