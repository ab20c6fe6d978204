// The original bucket op's compression="MinMaxUInt8"
// (bucket.append_centralized_synchronous_op, python/bagua/torch_api/bucket.py):
// the runtime's ByteGrad on one flat buffer of a fixed size, its steps and
// math (compress each rank's chunk, alltoall, reduce, compress, allgather),
// so a user algorithm copied from the original's ByteGradAlgorithmImpl runs.
// Python holds one per bucket: the scratch (about 3 bytes per element)
// lives as long as the bucket, and goes with it at a rebuild.
#pragma once

#include <cstdint>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "python/src/process_group.h"
#include "runtime/algorithms/bytegrad.h"

namespace bagua::python {

class MinMaxUInt8Allreduce {
 public:
  // `count` elements of `dtype` (float32, float16, bfloat16), a multiple of
  // the group's size; average: the mean over ranks, else the sum.
  MinMaxUInt8Allreduce(std::shared_ptr<ProcessGroup> group, size_t count, const std::string& dtype,
                       bool average);
  // CUDA: waits for work still on the group's stream before the scratch goes.
  ~MinMaxUInt8Allreduce();
  MinMaxUInt8Allreduce(const MinMaxUInt8Allreduce&) = delete;
  MinMaxUInt8Allreduce& operator=(const MinMaxUInt8Allreduce&) = delete;

  // The `count` elements at `ptr`, in place, ordered as the group's
  // collectives are (collectives.cc: CPU blocks, CUDA orders on `stream`).
  void run(uintptr_t ptr, uintptr_t stream);
  size_t count() const { return layout_[0].paddedNumel; }

 private:
  std::shared_ptr<ProcessGroup> group_;
  std::vector<BucketLayout> layout_;  // one bucket: the whole buffer
  ByteGrad algorithm_;
  std::mutex mutex_;  // one call at a time over the shared scratch
};

}  // namespace bagua::python
