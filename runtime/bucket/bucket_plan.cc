// planBuckets.
#include "runtime/bucket/bucket_plan.h"

#include "runtime/common/error.h"

namespace bagua {

std::vector<BucketLayout> planBuckets(const std::vector<TensorSpec>& tensors, size_t bucketBytes,
                                      size_t alignElems) {
  BAGUA_ENFORCE(bucketBytes > 0, "bucket size must be positive");
  BAGUA_ENFORCE(alignElems > 0, "bucket alignment must be positive");
  std::vector<BucketLayout> buckets;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& t = tensors[i];
    BAGUA_ENFORCE(t.device == tensors[0].device,
                  "tensor " + std::to_string(i) + " (" + t.name +
                      ") is on a different device than tensor 0; one runtime serves one device");
    requireAlgorithmDType("tensor " + std::to_string(i) + " (" + t.name + ")", t.dtype);
    bool fresh = buckets.empty() || buckets.back().dtype != t.dtype ||
                 buckets.back().numel * dtypeSize(t.dtype) >= bucketBytes;
    if (fresh) {
      buckets.emplace_back();
      buckets.back().dtype = t.dtype;
    }
    BucketLayout& b = buckets.back();
    b.slots.push_back(BucketSlot{i, b.numel});
    b.numel += t.numel;
  }
  for (BucketLayout& b : buckets) {
    b.paddedNumel = (b.numel + alignElems - 1) / alignElems * alignElems;
    if (b.paddedNumel == 0) b.paddedNumel = alignElems;  // empty tensors still communicate once
  }
  return buckets;
}

}  // namespace bagua
