// The weights of a model as local SGD and DiLoCo synchronise them: split
// into F fragments of consecutive whole tensors (registration order, about
// equal element counts; Streaming DiLoCo's fragments), each fragment planned
// into flat buckets (one dtype each, about bucketBytes, padded with zeros to
// a multiple of `alignment`). Every rank derives the same plan from the same
// tensors. The copies between the tensors and a bucket's flat buffer are
// templates over the ops that run them: DeviceOps (the communicator's
// stream or worker) or StepOps (the training's stream), which share these
// signatures.
//
// The schedule: local step s = 1, 2, ... counts optimizer steps after the
// warm-up. Fragment f (0-based) of F syncs after local steps
//   s = o_f, o_f + H, o_f + 2H, ...   with o_f = (f + 1) * H / F (integer division)
// so with F = 1 every H-th step, and with F > 1 the fragments take turns,
// H/F steps apart; each fragment trains H local steps between two syncs
// (fewer before its first). F <= H keeps every o_f >= 1 and distinct. When
// H changes (autotune), the schedule restarts at that step (`base`).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/bucket/bucket_plan.h"

namespace bagua {

class WeightFragments {
 public:
  // `algorithm` names the caller in errors. Throws InvalidArgument when
  // `fragments` is < 1 or larger than the number of tensors.
  WeightFragments(std::vector<TensorSpec> weights, int64_t fragments, size_t bucketBytes,
                  size_t alignment, const std::string& algorithm);

  size_t fragments() const { return bucketsOf_.size(); }
  // Every fragment's buckets, fragment after fragment; slots index weights().
  const std::vector<BucketLayout>& buckets() const { return buckets_; }
  // Indices into buckets() of fragment f's buckets.
  const std::vector<size_t>& bucketsOf(size_t f) const { return bucketsOf_[f]; }
  const std::vector<TensorSpec>& weights() const { return weights_; }
  // Elements of fragment f (without padding).
  size_t fragmentElements(size_t f) const;

  // flat <- the bucket's tensors (padding untouched).
  template <typename Ops>
  void gather(Ops& ops, size_t bucket, void* flat) const {
    for (const BucketSlot& s : buckets_[bucket].slots) {
      const TensorSpec& t = weights_[s.tensor];
      ops.copy(at(bucket, flat, s), t.data, t.numel * dtypeSize(t.dtype));
    }
  }
  // The bucket's tensors <- flat.
  template <typename Ops>
  void scatter(Ops& ops, size_t bucket, const void* flat) const {
    for (const BucketSlot& s : buckets_[bucket].slots) {
      const TensorSpec& t = weights_[s.tensor];
      ops.copy(t.data, at(bucket, flat, s), t.numel * dtypeSize(t.dtype));
    }
  }
  // tensors <- tensors + alpha * flat.
  template <typename Ops>
  void addToTensors(Ops& ops, size_t bucket, const void* flat, float alpha) const {
    for (const BucketSlot& s : buckets_[bucket].slots) {
      const TensorSpec& t = weights_[s.tensor];
      ops.addScaled(t.dtype, t.data, t.data, at(bucket, flat, s), t.numel, alpha);
    }
  }
  // out <- a + alpha * tensors (out and a flat buffers of the bucket; padding untouched).
  template <typename Ops>
  void combine(Ops& ops, size_t bucket, void* out, const void* a, float alpha) const {
    for (const BucketSlot& s : buckets_[bucket].slots) {
      const TensorSpec& t = weights_[s.tensor];
      ops.addScaled(t.dtype, at(bucket, out, s), at(bucket, a, s), t.data, t.numel, alpha);
    }
  }

 private:
  template <typename P>
  P* at(size_t bucket, P* flat, const BucketSlot& s) const {
    using Byte = std::conditional_t<std::is_const_v<P>, const uint8_t, uint8_t>;
    return reinterpret_cast<Byte*>(flat) + s.offset * dtypeSize(buckets_[bucket].dtype);
  }

  std::vector<TensorSpec> weights_;
  std::vector<BucketLayout> buckets_;
  std::vector<std::vector<size_t>> bucketsOf_;
};

// When fragments sync (the rule above), counted from local step `base`
// (0, or the step at which sync_every last changed: the schedule restarts
// there, as if that step were step 0).
struct SyncSchedule {
  int64_t every = 1;      // H
  int64_t fragments = 1;  // F
  int64_t base = 0;

  // o_f: fragment f's first sync step after base.
  int64_t offset(size_t f) const { return (static_cast<int64_t>(f) + 1) * every / fragments; }
  // Whether fragment f syncs after local step `step` (>= 1).
  bool syncs(size_t f, int64_t step) const {
    const int64_t s = step - base;
    return s >= offset(f) && (s - offset(f)) % every == 0;
  }
};

}  // namespace bagua
