// WeightFragments: splitting by element count, bucket planning per fragment.
#include "runtime/algorithms/weight_fragments.h"

#include "runtime/common/error.h"

namespace bagua {

WeightFragments::WeightFragments(std::vector<TensorSpec> weights, int64_t fragments,
                                 size_t bucketBytes, size_t alignment, const std::string& algorithm)
    : weights_(std::move(weights)) {
  const auto count = static_cast<int64_t>(weights_.size());
  BAGUA_ENFORCE(fragments >= 1,
                algorithm + ": fragments must be at least 1, got " + std::to_string(fragments));
  BAGUA_ENFORCE(fragments <= count, algorithm + ": fragments (" + std::to_string(fragments) +
                                        ") is larger than the number of parameter tensors (" +
                                        std::to_string(count) +
                                        "); a fragment holds whole tensors");
  size_t total = 0;
  for (const TensorSpec& t : weights_) total += t.numel;
  // Tensor i goes to the fragment its first element falls in when the
  // elements are cut into F equal parts, but every fragment keeps at least
  // one tensor and leaves one for each fragment after it.
  std::vector<size_t> fragmentOf(weights_.size());
  size_t before = 0;
  size_t f = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    const size_t left = weights_.size() - i;  // tensors from i on
    const size_t fragmentsLeft = static_cast<size_t>(fragments) - f;
    const bool fragmentHasOne = i > 0 && fragmentOf[i - 1] == f;
    const bool crossed = total > 0 && before * static_cast<size_t>(fragments) >= (f + 1) * total;
    if (fragmentHasOne && (crossed || left < fragmentsLeft) &&
        f + 1 < static_cast<size_t>(fragments)) {
      ++f;
    }
    fragmentOf[i] = f;
    before += weights_[i].numel;
  }
  bucketsOf_.resize(static_cast<size_t>(fragments));
  for (size_t g = 0; g < bucketsOf_.size(); ++g) {
    std::vector<TensorSpec> mine;
    std::vector<size_t> index;
    for (size_t i = 0; i < weights_.size(); ++i) {
      if (fragmentOf[i] != g) continue;
      mine.push_back(weights_[i]);
      index.push_back(i);
    }
    for (BucketLayout& b : planBuckets(mine, bucketBytes, alignment)) {
      for (BucketSlot& s : b.slots) s.tensor = index[s.tensor];
      bucketsOf_[g].push_back(buckets_.size());
      buckets_.push_back(std::move(b));
    }
  }
}

size_t WeightFragments::fragmentElements(size_t f) const {
  size_t n = 0;
  for (size_t b : bucketsOf_[f]) n += buckets_[b].numel;
  return n;
}

}  // namespace bagua
