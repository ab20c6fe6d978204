// Buffers for values fetched from a store, reused. A value the size of one
// freed before gets that buffer back, its pages already mapped, instead of
// fresh memory the kernel faults in page by page: for 256 KiB samples read a
// batch at a time, those faults were half the client's CPU time (malloc
// hands large blocks back to the kernel when a batch is freed). Buffers are
// released by whichever thread drops the last user (a tensor viewing one),
// so the pool is thread-safe and outlives its creator while buffers are out.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace bagua {

class ValuePool : public std::enable_shared_from_this<ValuePool> {
 public:
  // Values below this size come from plain new[] (malloc reuses them well).
  static constexpr size_t kMinPooledBytes = 32 * 1024;

  // A pool keeping at most `maxFreeBytes` of free buffers.
  static std::shared_ptr<ValuePool> create(size_t maxFreeBytes);
  ~ValuePool();
  ValuePool(const ValuePool&) = delete;
  ValuePool& operator=(const ValuePool&) = delete;

  // A buffer of `bytes` (uninitialized), returned here when released.
  std::shared_ptr<char[]> take(size_t bytes);
  // Bytes of free buffers held now.
  size_t freeBytes();

 private:
  explicit ValuePool(size_t maxFreeBytes) : maxFreeBytes_(maxFreeBytes) {}
  void give(char* buffer, size_t bytes);

  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<char*>> free_;  // by exact size
  size_t freeBytes_ = 0;
  const size_t maxFreeBytes_;
};

}  // namespace bagua
