// GradientAllreduce.
#include "runtime/algorithms/gradient_allreduce.h"

namespace bagua {

std::shared_ptr<Work> GradientAllreduce::communicate(BucketContext& bucket) {
  return bucket.comm->allreduce(bucket.data, bucket.layout->paddedNumel, bucket.layout->dtype,
                                options_.average ? ReduceOp::kAvg : ReduceOp::kSum);
}

}  // namespace bagua
