// One TCP stream of a comm, owned by one engine worker: every method below
// except the constructor runs on that worker's thread, so the state needs no
// lock. SendStream and RecvStream add the data-path state machines.
#pragma once

#include "net_plugin/base/socket_util.h"
#include "net_plugin/engine/engine.h"
#include "net_plugin/transport/stream_owner.h"

namespace bagua::net {

class Stream : public IoHandler {
 public:
  Stream(StreamOwner* owner, int index, Fd fd, Worker* worker)
      : owner_(owner), index_(index), fd_(std::move(fd)), worker_(worker) {}

  Worker& worker() { return *worker_; }
  int index() const { return index_; }

  // Attaches the fd to the worker and begins (receive streams post a read).
  virtual void start() { attachToWorker(); }
  // Stops: shuts the socket down and cancels pending I/O, then closes once
  // nothing is pending, telling the owner through StreamOwner::streamClosed().
  void beginClose();

 protected:
  // Attaches the fd to the worker; false (the owner failed, the stream
  // `broken_`) when the worker cannot watch it.
  bool attachToWorker();
  // True while a send, receive or timer is pending on the engine.
  bool ioPending() const { return sendPending_ || recvPending_ || timerPending_; }
  // True while the kernel still holds buffers of finished zero-copy sends.
  virtual bool kernelHoldsBuffers() const { return false; }
  // Called by subclasses when an operation finished; closes if asked to.
  // Returns true when the stream is closing (the caller must stop).
  bool settleAfterIo();
  // Called when the kernel released the last held buffer of a closed stream.
  void settleAfterRelease();

  StreamOwner* owner_;
  int index_;
  Fd fd_;
  Worker* worker_;
  bool sendPending_ = false;
  bool recvPending_ = false;
  bool timerPending_ = false;
  bool closing_ = false;
  bool broken_ = false;  // never attached: no I/O may start
  bool closed_ = false;  // fd closed; the owner is told once buffers are released
  bool reportedClosed_ = false;

 private:
  void finishClose();
};

}  // namespace bagua::net
