// Gradient allreduce (Bagua's GradientAllReduceAlgorithm, non-hierarchical):
// each gradient bucket is allreduced in place, averaged by default.
#pragma once

#include "runtime/algorithms/algorithm.h"
#include "runtime/algorithms/registry.h"

namespace bagua {

class GradientAllreduce final : public Algorithm {
 public:
  struct Options {
    bool average = true;  // mean over ranks (false: sum)
  };
  GradientAllreduce() : GradientAllreduce(Options{}) {}
  explicit GradientAllreduce(Options options) : options_(options) {}

  const char* name() const override { return "gradient_allreduce"; }
  std::shared_ptr<Work> communicate(BucketContext& bucket) override;

 private:
  Options options_;
};

// Its registry entry ("gradient_allreduce").
AlgorithmInfo gradientAllreduceInfo();

}  // namespace bagua
