// The wake-up mechanisms wake_floor compares, behind one interface: blocking
// recv/send, epoll (as epoll_engine.cc), io_uring with and without the
// engine's ring flags (as uring_engine.cc), and a wait for an eventfd through
// each. One Io per thread: an io_uring ring made with SINGLE_ISSUER belongs
// to the thread that made it.
#pragma once

#include <cerrno>
#include <cstddef>
#include <memory>
#include <string>

namespace bagua::bench {

// Prints "wake_floor: WHAT: strerror(err)" and exits with status 1.
[[noreturn]] void fail(const std::string& what, int err = errno);

// Blocking send and receive of exactly n bytes, and a wait for an eventfd,
// through one wake-up mechanism.
class Io {
 public:
  virtual ~Io() = default;
  // Sends all n bytes of buf, blocking until done.
  virtual void sendAll(const char* buf, size_t n) = 0;
  // Receives exactly n bytes into buf, blocking until done.
  virtual void recvAll(char* buf, size_t n) = 0;
  // Waits until the eventfd's counter is non-zero, then clears it.
  virtual void waitEvent(int efd) = 0;
  // True when waitEvent() needs a blocking eventfd.
  virtual bool blockingEvent() const { return false; }
};

// The Io of `mode` (blocking, epoll, uring, uring-read, uring-plain) on the
// connected socket `fd`.
std::unique_ptr<Io> makeIo(const std::string& mode, int fd);

}  // namespace bagua::bench
