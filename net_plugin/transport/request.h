// A request NCCL tests with test(): one isend or irecv.
//
// Requests live in a fixed pool of NCCL_NET_MAX_REQUESTS per comm, so a
// connection never allocates on the data path. Fields marked (mutex) are
// guarded by the owning comm's mutex; doneBytes and done are written by
// worker threads and read by test() without the lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "net_plugin/nccl/net_types.h"

namespace bagua::net {

class Comm;

enum class RequestKind : uint8_t { kSend, kRecv };

inline constexpr size_t kUnknownSize = std::numeric_limits<size_t>::max();

struct Request {
  static constexpr uint32_t kMagic = 0x52514241;  // "ABQR"
  uint32_t magic = kMagic;
  RequestKind kind = RequestKind::kSend;
  Comm* comm = nullptr;
  std::atomic<bool> inUse{false};  // written under the mutex; read by test() checks
  uint64_t seq = 0;                // message sequence number on the connection
  uint8_t* data = nullptr;         // user buffer
  size_t size = 0;                 // send: message bytes; recv: buffer capacity
  size_t msgSize = kUnknownSize;   // recv: bytes the sender announced (mutex, then read-only)
  std::atomic<size_t> doneBytes{0};
  std::atomic<bool> done{false};
  std::atomic<bool> workerBytes{false};  // recv: a chunk of it arrived on a worker's stream
  uint32_t tests = 0;                    // test() calls so far (BAGUA_NET_TRACE)
};

// Fixed-capacity free list; callers hold the comm mutex.
class RequestPool {
 public:
  static constexpr int kCapacity = NCCL_NET_MAX_REQUESTS;

  RequestPool(Comm* comm, RequestKind kind) {
    for (Request& r : slots_) {
      r.comm = comm;
      r.kind = kind;
    }
  }

  // A free request reset for a new message, or nullptr when all are in use.
  Request* acquire() {
    for (Request& r : slots_) {
      if (!r.inUse.load(std::memory_order_relaxed)) {
        r.inUse.store(true, std::memory_order_relaxed);
        r.msgSize = kUnknownSize;
        r.doneBytes.store(0, std::memory_order_relaxed);
        r.done.store(false, std::memory_order_relaxed);
        r.workerBytes.store(false, std::memory_order_relaxed);
        r.tests = 0;
        return &r;
      }
    }
    return nullptr;
  }

  void release(Request* r) { r->inUse.store(false, std::memory_order_relaxed); }

  // True when a posted request still waits for bytes (finished ones that
  // test() has not collected yet do not count).
  bool anyUnfinished() const {
    for (const Request& r : slots_) {
      if (r.inUse.load(std::memory_order_relaxed) && !r.done.load(std::memory_order_acquire)) {
        return true;
      }
    }
    return false;
  }

  bool owns(const Request* r) const { return r >= slots_ && r < slots_ + kCapacity; }

 private:
  Request slots_[kCapacity];
};

}  // namespace bagua::net
