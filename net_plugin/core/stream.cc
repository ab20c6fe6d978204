// Stream start and close protocol.
#include "net_plugin/core/stream.h"

#include <sys/socket.h>

#include "net_plugin/core/comm.h"

namespace bagua::net {

void Stream::start() { worker_->attach(fd_.get(), this); }

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

void Stream::finishClose() {
  if (closed_) return;
  closed_ = true;
  worker_->detach(fd_.get());
  fd_.reset();  // close(): queued data still goes out, followed by FIN
  comm_->streamClosed();
}

}  // namespace bagua::net
