// ValuePool: free buffers by exact size (a dataset's samples mostly share a
// few sizes), bounded in total; buffers past the bound are deleted.
#include "runtime/data/value_pool.h"

namespace bagua {

std::shared_ptr<ValuePool> ValuePool::create(size_t maxFreeBytes) {
  return std::shared_ptr<ValuePool>(new ValuePool(maxFreeBytes));
}

ValuePool::~ValuePool() {
  for (auto& [bytes, buffers] : free_) {
    for (char* b : buffers) delete[] b;
  }
}

std::shared_ptr<char[]> ValuePool::take(size_t bytes) {
  if (bytes < kMinPooledBytes) return std::shared_ptr<char[]>(new char[bytes]);
  char* buffer = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      buffer = it->second.back();
      it->second.pop_back();
      freeBytes_ -= bytes;
    }
  }
  if (buffer == nullptr) buffer = new char[bytes];
  return std::shared_ptr<char[]>(
      buffer, [pool = shared_from_this(), bytes](char* b) { pool->give(b, bytes); });
}

void ValuePool::give(char* buffer, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (freeBytes_ + bytes <= maxFreeBytes_) {
      free_[bytes].push_back(buffer);
      freeBytes_ += bytes;
      return;
    }
  }
  delete[] buffer;
}

size_t ValuePool::freeBytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return freeBytes_;
}

}  // namespace bagua
