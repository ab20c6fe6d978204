// Stream start and close protocol.
#include "net_plugin/transport/stream.h"

#include <sys/socket.h>

#include "net_plugin/base/socket_util.h"

namespace bagua::net {

bool Stream::attachToWorker() {
  int result = worker_->attach(fd_.get(), this);
  if (result == 0) return true;
  broken_ = true;
  owner_->streamFailed(Status::kSystemError,
                       errnoMessage("stream " + std::to_string(index_) +
                                        " could not join its engine worker (epoll_ctl or fcntl)",
                                    -result));
  return false;
}

void Stream::beginClose() {
  closing_ = true;
  if (ioPending()) {
    // Wake pending operations: shutdown completes a blocked receive with 0
    // and a blocked send with EPIPE; cancel covers what shutdown does not.
    ::shutdown(fd_.get(), SHUT_RDWR);
    worker_->cancel(fd_.get());
    return;
  }
  finishClose();
}

bool Stream::settleAfterIo() {
  if (!closing_) return false;
  if (!ioPending()) finishClose();
  return true;
}

void Stream::settleAfterRelease() {
  if (closed_ && !reportedClosed_ && !kernelHoldsBuffers()) {
    reportedClosed_ = true;
    owner_->streamClosed();  // the owner may delete this stream from here on
  }
}

void Stream::finishClose() {
  if (closed_) return;
  closed_ = true;
  worker_->detach(fd_.get());
  // Zero-copy data still queued: a reset instead of a graceful close, so the
  // kernel drops the queue and its notifications arrive promptly rather than
  // after a dead peer's retransmission timeout. On the socket, not through
  // close(): close() ends the connection only with the last descriptor, and a
  // child the process fork()ed (a PyTorch DataLoader worker) holds copies;
  // the peer would then wait on a socket nobody reads (socket_util.h).
  endConnection(fd_.get(), kernelHoldsBuffers());
  fd_.reset();
  settleAfterRelease();
}

}  // namespace bagua::net
