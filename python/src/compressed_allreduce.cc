// MinMaxUInt8Allreduce: a ByteGrad set up for one bucket of the whole buffer.
#include "python/src/compressed_allreduce.h"

#include <cstdio>

#include "runtime/common/error.h"

namespace bagua::python {
namespace {

ByteGrad::Options averaging(bool average) {
  ByteGrad::Options options;
  options.average = average;
  return options;
}

}  // namespace

MinMaxUInt8Allreduce::MinMaxUInt8Allreduce(std::shared_ptr<ProcessGroup> group, size_t count,
                                           const std::string& dtype, bool average)
    : group_(std::move(group)), layout_(1), algorithm_(averaging(average)) {
  BAGUA_ENFORCE(group_ != nullptr, "allreduce_minmax_uint8: no process group");
  const auto n = static_cast<size_t>(group_->size());
  BAGUA_ENFORCE(count % n == 0, "allreduce_minmax_uint8: " + std::to_string(count) +
                                    " elements are not a multiple of the group's " +
                                    std::to_string(n) + " ranks (pad the buffer)");
  layout_[0].dtype = parseDType(dtype);
  layout_[0].numel = layout_[0].paddedNumel = count;
  algorithm_.setup(layout_, *group_->comm_, *group_->ops_);
}

MinMaxUInt8Allreduce::~MinMaxUInt8Allreduce() {
  try {
    group_->ops_->fence("allreduce_minmax_uint8: releasing its scratch")->wait(group_->timeout_);
  } catch (const std::exception& e) {
    // The group failed or a peer is gone; the work that used the scratch
    // failed with it. Nothing to raise from a destructor: say so.
    std::fprintf(stderr, "[bagua] allreduce_minmax_uint8: %s\n", e.what());
  }
}

void MinMaxUInt8Allreduce::run(uintptr_t ptr, uintptr_t stream) {
  if (count() == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  BucketContext bucket;
  bucket.layout = &layout_[0];
  bucket.data = reinterpret_cast<void*>(ptr);
  bucket.comm = group_->comm_.get();
  bucket.ops = group_->ops_.get();
  group_->run(stream, [&] { return algorithm_.communicate(bucket); });
}

}  // namespace bagua::python
