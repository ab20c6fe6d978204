// SharedCounters: a header (magic, count) then the counters, each updated
// with std::atomic_ref (lock-free and address-free for uint64_t on the
// platforms we build for, so valid across processes).
#include "runtime/data/shared_counters.h"

#include <atomic>
#include <cstring>

#include "runtime/common/error.h"

namespace bagua {
namespace {

constexpr char kMagic[8] = {'B', 'A', 'G', 'U', 'A', 'S', 'C', '1'};
constexpr size_t kMaxCounters = 4096;
constexpr size_t kHeaderBytes = 64;
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);

}  // namespace

std::unique_ptr<SharedCounters> SharedCounters::create(size_t count) {
  BAGUA_ENFORCE(count > 0 && count <= kMaxCounters, "shared counter count " +
                                                        std::to_string(count) + " is not in [1, " +
                                                        std::to_string(kMaxCounters) + "]");
  SharedSegment segment =
      SharedSegment::create("bagua-cache-stats", kHeaderBytes + count * sizeof(uint64_t));
  std::memcpy(segment.data(), kMagic, sizeof(kMagic));
  uint64_t stored = count;
  std::memcpy(segment.data() + sizeof(kMagic), &stored, sizeof(stored));
  return std::unique_ptr<SharedCounters>(new SharedCounters(std::move(segment)));
}

std::unique_ptr<SharedCounters> SharedCounters::attach(const std::string& path) {
  SharedSegment segment = SharedSegment::attach(path);
  BAGUA_ENFORCE(segment.size() >= kHeaderBytes && std::memcmp(segment.data(), kMagic, 8) == 0,
                path + " is not a bagua counter block");
  return std::unique_ptr<SharedCounters>(new SharedCounters(std::move(segment)));
}

SharedCounters::SharedCounters(SharedSegment segment) : segment_(std::move(segment)) {
  uint64_t stored = 0;
  std::memcpy(&stored, segment_.data() + sizeof(kMagic), sizeof(stored));
  BAGUA_ENFORCE(stored > 0 && stored <= kMaxCounters &&
                    kHeaderBytes + stored * sizeof(uint64_t) <= segment_.size(),
                "a bagua counter block holds a damaged count " + std::to_string(stored));
  count_ = stored;
}

uint64_t* SharedCounters::slot(size_t index) const {
  BAGUA_ENFORCE(index < count_, "counter index " + std::to_string(index) + " is not below " +
                                    std::to_string(count_));
  return reinterpret_cast<uint64_t*>(segment_.data() + kHeaderBytes) + index;
}

uint64_t SharedCounters::add(size_t index, uint64_t delta) {
  return std::atomic_ref<uint64_t>(*slot(index)).fetch_add(delta, std::memory_order_relaxed);
}

uint64_t SharedCounters::get(size_t index) const {
  return std::atomic_ref<uint64_t>(*slot(index)).load(std::memory_order_relaxed);
}

}  // namespace bagua
