// SendStream: one stream's send loop. Each chunk goes as header + payload in
// one sendmsg, resumed after short writes. With zero-copy on, a chunk of at
// least zeroCopyBytes goes with SENDMSG_ZC from a slot that keeps its header
// until the kernel's notification; the chunk counts towards its request only
// then, since NCCL may reuse the buffer as soon as test() reports done. The
// stream moves on to the next chunk while earlier ones await notification
// (up to kZeroCopySlots).
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "net_plugin/base/log.h"
#include "net_plugin/transport/send_comm.h"
#include "net_plugin/transport/zero_copy_stats.h"

namespace bagua::net {

void ZeroCopySlot::onZeroCopySent(int result, bool notifyFollows) {
  stream->onSlotSent(this, result, notifyFollows);
}

void ZeroCopySlot::onZeroCopyNotify(bool copied) { stream->onSlotReleased(this, copied); }

SendStream::SendStream(SendComm* comm, int index, Fd fd, Worker* worker, ZeroCopyMode zeroCopy,
                       size_t zeroCopyBytes)
    : Stream(comm, index, std::move(fd), worker), sendComm_(comm), zeroCopyMode_(zeroCopy) {
  zeroCopy_ = zeroCopy != ZeroCopyMode::kOff && worker->zeroCopySupported();
  zeroCopyBytes_ = zeroCopyBytes;
  if (zeroCopy != ZeroCopyMode::kOff && !zeroCopy_) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true)) {
      BAGUA_INFO(NCCL_INIT | NCCL_NET,
                 "BAGUA_NET_ZEROCOPY is set but this engine cannot send zero-copy (it needs "
                 "io_uring with SENDMSG_ZC, Linux 6.1+); sending with copies");
    }
  }
  for (ZeroCopySlot& slot : slots_) slot.stream = this;
}

ZeroCopySlot* SendStream::freeSlot() {
  for (ZeroCopySlot& slot : slots_) {
    if (!slot.inUse) return &slot;
  }
  return nullptr;
}

bool SendStream::kernelHoldsBuffers() const {
  for (const ZeroCopySlot& slot : slots_) {
    if (slot.notifications > 0) return true;
  }
  return false;
}

void SendStream::pump() {
  if (sendPending_ || timerPending_ || closing_ || broken_) return;
  ZeroCopySlot* slot = nullptr;
  if (zeroCopy_) {
    slot = freeSlot();
    if (slot == nullptr) {  // every slot awaits the kernel: the next notification pumps
      waitingForSlot_ = true;
      return;
    }
  }
  if (!sendComm_->takeChunk(index_, &chunk_)) return;
  zcSlot_ = nullptr;
  if (slot != nullptr && chunk_.len >= zeroCopyBytes_ && chunk_.len > 0) {
    zcSlot_ = slot;
    *slot = ZeroCopySlot{};
    slot->stream = this;
    slot->chunk = chunk_;
    slot->inUse = true;
  }
  prepare(0);
  if (RateLimiter* limiter = sendComm_->limiter()) {
    std::chrono::nanoseconds wait = limiter->reserve(remaining_);
    if (wait.count() > 0) {
      timerPending_ = true;
      worker_->wakeAfter(fd_.get(), wait);
      return;
    }
  }
  submit();
}

void SendStream::onTimer() {
  timerPending_ = false;
  if (settleAfterIo()) return;
  submit();
}

void SendStream::resume(Chunk chunk, size_t sent) {
  chunk_ = chunk;
  zcSlot_ = nullptr;
  prepare(sent);
  if (closing_ || broken_) return;
  submit();
}

void SendStream::prepare(size_t skip) {
  Request* req = chunk_.req;
  ChunkHeader& header = zcSlot_ != nullptr ? zcSlot_->header : header_;
  header = makeChunkHeader(req->seq, req->size, chunk_.offset, chunk_.len);
  iov_[0] = {&header, sizeof(header)};
  iov_[1] = {req->data + chunk_.offset, chunk_.len};
  iovcnt_ = chunk_.len > 0 ? 2 : 1;
  remaining_ = sizeof(header) + chunk_.len - skip;
  // Drop the bytes already sent from the front of the iovec.
  int first = 0;
  while (first < iovcnt_ && skip >= iov_[first].iov_len) skip -= iov_[first++].iov_len;
  if (first < iovcnt_) {
    iov_[first].iov_base = static_cast<uint8_t*>(iov_[first].iov_base) + skip;
    iov_[first].iov_len -= skip;
  }
  if (first == 1) iov_[0] = iov_[1];
  iovcnt_ -= first;
}

void SendStream::submit() {
  sendPending_ = true;
  if (zcSlot_ != nullptr) {
    zeroCopyStats().sends.fetch_add(1, std::memory_order_relaxed);
    worker_->sendZeroCopy(fd_.get(), iov_, iovcnt_, zcSlot_);
  } else {
    worker_->send(fd_.get(), iov_, iovcnt_);
  }
}

void SendStream::fail(int err) {
  Status status = (err == EPIPE || err == ECONNRESET || err == ETIMEDOUT) ? Status::kRemoteError
                                                                          : Status::kSystemError;
  sendComm_->fail(status, errnoMessage("send on stream " + std::to_string(index_), err));
}

void SendStream::credit(const Chunk& chunk) {
  // Read the target before adding: once another stream completes the
  // message, test() may release and reuse the request.
  Request* req = chunk.req;
  size_t target = req->size;
  size_t total = req->doneBytes.fetch_add(chunk.len, std::memory_order_acq_rel) + chunk.len;
  if (total == target) req->done.store(true, std::memory_order_release);
}

void SendStream::onSendDone(int result) {
  sendPending_ = false;
  if (settleAfterIo()) return;
  if (result <= 0) {
    fail(result == 0 ? EPIPE : -result);
    return;
  }
  remaining_ -= static_cast<size_t>(result);
  if (remaining_ > 0) {
    // Short write: continue after the bytes the kernel took.
    prepare(sizeof(header_) + chunk_.len - remaining_);
    submit();
    return;
  }
  if (chunk_.req->size <= kSpinMessageBytes) worker_->smallMessageDone();  // before credit frees it
  credit(chunk_);
  pump();
}

void SendStream::onSlotSent(ZeroCopySlot* slot, int result, bool notifyFollows) {
  sendPending_ = false;
  if (notifyFollows) ++slot->notifications;
  if (settleAfterIo()) return;
  size_t sent = sizeof(slot->header) + chunk_.len - remaining_;
  if ((result == -EINVAL || result == -EOPNOTSUPP) && !notifyFollows) {
    // A kernel without SEND_ZC usage reports (before 6.2), or a socket that
    // cannot do zero-copy: finish this chunk, and all later ones, by copying.
    BAGUA_INFO(NCCL_INIT | NCCL_NET, "zero-copy send refused on stream %d (%s); copying instead",
               index_, strerror(-result));
    zeroCopy_ = false;
    header_ = slot->header;
    slot->inUse = slot->notifications > 0;
    zcSlot_ = nullptr;
    prepare(sent);
    submit();
    return;
  }
  if (result <= 0) {
    fail(result == 0 ? EPIPE : -result);
    return;
  }
  remaining_ -= static_cast<size_t>(result);
  if (remaining_ > 0) {
    prepare(sent + static_cast<size_t>(result));
    submit();
    return;
  }
  slot->allSent = true;
  zcSlot_ = nullptr;
  retireIfReleased(slot);
  pump();
}

void SendStream::onSlotReleased(ZeroCopySlot* slot, bool copied) {
  --slot->notifications;
  zeroCopyStats().notifications.fetch_add(1, std::memory_order_relaxed);
  if (copied) zeroCopyStats().copied.fetch_add(1, std::memory_order_relaxed);
  if (copied && zeroCopy_ && zeroCopyMode_ == ZeroCopyMode::kAuto) {
    // The route copies anyway (loopback, veth): zero-copy would only add
    // page pinning and notifications, so this stream stops using it.
    zeroCopy_ = false;
    BAGUA_TRACE_LOG("stream %d: the kernel copied a zero-copy send; copying from now on", index_);
  }
  if (closing_) {
    if (slot->notifications == 0) slot->inUse = false;
    settleAfterRelease();  // may report the stream closed: touch nothing after
    return;
  }
  retireIfReleased(slot);
  if (waitingForSlot_) {
    waitingForSlot_ = false;
    pump();
  }
}

void SendStream::retireIfReleased(ZeroCopySlot* slot) {
  if (!slot->allSent || slot->notifications > 0) return;
  credit(slot->chunk);
  slot->inUse = false;
}

}  // namespace bagua::net
