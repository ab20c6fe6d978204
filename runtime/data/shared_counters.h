// Counters shared by the processes of one cache client: the process that
// made a CacheLoader and its DataLoader workers (forked, or spawned and
// attached by path), so that cache.stats() in the training process counts
// what every worker saw. Lock-free atomics in a SharedSegment.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/data/shared_segment.h"

namespace bagua {

class SharedCounters {
 public:
  // `count` counters, all 0. Throws InvalidArgument for 0 or above 4096.
  static std::unique_ptr<SharedCounters> create(size_t count);
  // The counters another process created (its attachPath()).
  static std::unique_ptr<SharedCounters> attach(const std::string& path);

  // Adds `delta` to counter `index`; returns the value before.
  uint64_t add(size_t index, uint64_t delta);
  uint64_t get(size_t index) const;
  size_t size() const { return count_; }
  std::string attachPath() const { return segment_.attachPath(); }

 private:
  explicit SharedCounters(SharedSegment segment);
  uint64_t* slot(size_t index) const;

  SharedSegment segment_;
  size_t count_ = 0;
};

}  // namespace bagua
