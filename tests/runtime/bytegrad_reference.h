// What ByteGrad must produce for one bucket, computed on the CPU with the
// same quantization steps (compress, exchange, decompress, reduce, compress
// the reduced chunk, gather): the Gloo and NCCL reducer tests compare their
// results with it bit for bit.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "runtime/bucket/bucket_plan.h"

namespace bagua::testing {

// One rank's input to bucket `b`: each slot's tensor (tensorOf(t)) at its
// offset, zero padding elsewhere.
std::vector<float> flattenBucket(const BucketLayout& b,
                                 const std::function<std::vector<float>(size_t tensor)>& tensorOf);

// inputs[r]: rank r's flattened bucket (paddedNumel floats, a multiple of
// size). Returns the bucket every rank must hold after the step (a world of
// one: its input, which ByteGrad does not compress).
std::vector<float> bytegradReference(const std::vector<std::vector<float>>& inputs, int size);

}  // namespace bagua::testing
