// Detects ranks that registered different tensors before any collective
// could hang on mismatched sizes: every rank publishes its registration
// (count, then numel and dtype of each tensor) in the store and compares all
// of them with its own.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "runtime/bucket/tensor_spec.h"
#include "runtime/store/store.h"

namespace bagua {

// Throws InvalidArgument naming the first difference ("rank 1 registered
// 12 tensors, rank 0 registered 11" or "tensor 3 (fc.weight): rank 0 has
// 4096 float32, rank 2 has 4095 float32"); TimeoutError naming the ranks
// that never published within `timeout`.
void checkRegistrationConsistent(Store& store, const std::string& prefix, int rank, int size,
                                 const std::vector<TensorSpec>& tensors,
                                 std::chrono::milliseconds timeout);

}  // namespace bagua
