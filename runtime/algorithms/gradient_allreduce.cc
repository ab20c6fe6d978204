// GradientAllreduce.
#include "runtime/algorithms/gradient_allreduce.h"

namespace bagua {

std::shared_ptr<Work> GradientAllreduce::communicate(BucketContext& bucket) {
  return bucket.comm->allreduce(bucket.data, bucket.layout->paddedNumel, bucket.layout->dtype,
                                options_.average ? ReduceOp::kAvg : ReduceOp::kSum);
}

AlgorithmInfo gradientAllreduceInfo() {
  AlgorithmInfo info;
  info.name = "gradient_allreduce";
  info.description = "gradients averaged (or summed) by allreduce, bucket by bucket";
  info.communicates = Communicates::kGradients;
  info.trigger = Trigger::kTensorReady;
  info.options = {
      {"hierarchical", false, "reduce inside a node first, then among node leaders"},
      {"average", true, "mean over ranks (false: sum)"},
  };
  info.factory = [](const OptionMap& o) {
    return std::make_shared<GradientAllreduce>(GradientAllreduce::Options{optionBool(o, "average")});
  };
  return info;
}

}  // namespace bagua
