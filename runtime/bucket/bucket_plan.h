// Bucket planning: registered tensors, in registration order (the same on
// every rank), are grouped into buckets of about `bucketBytes`, each bucket
// one dtype and one contiguous buffer, so each bucket is one communication.
//
// Rules (deterministic, so every rank derives the same plan): walk the
// tensors in order; start a new bucket when the dtype changes or when the
// current bucket has reached bucketBytes (a bucket may overshoot by its last
// tensor, never split one); pad each bucket's length up to a multiple of
// `alignElems` (ByteGrad needs a multiple of the world size).
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/bucket/tensor_spec.h"

namespace bagua {

struct BucketSlot {
  size_t tensor = 0;  // index into the registered tensors
  size_t offset = 0;  // element offset inside the bucket
};

struct BucketLayout {
  DType dtype = DType::kFloat32;
  std::vector<BucketSlot> slots;
  size_t numel = 0;        // sum of the tensors' elements
  size_t paddedNumel = 0;  // numel rounded up to the alignment (padding is zero)
  size_t bytes() const { return paddedNumel * dtypeSize(dtype); }
};

// Throws InvalidArgument for bucketBytes == 0, alignElems == 0, tensors on
// different devices, or a tensor that is not float32, float16 or bfloat16.
std::vector<BucketLayout> planBuckets(const std::vector<TensorSpec>& tensors, size_t bucketBytes,
                                      size_t alignElems);

}  // namespace bagua
