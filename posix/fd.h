// An owning file descriptor: closes it on destruction. Header-only, so the
// plugin (which links nothing but libc and liburing) uses it as the runtime,
// tools and tests do.
#pragma once

#include <unistd.h>

#include <utility>

namespace bagua::posix {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  // The descriptor (-1 when empty).
  int get() const { return fd_; }
  // Whether it holds a descriptor.
  bool valid() const { return fd_ >= 0; }
  // Gives the descriptor up without closing it.
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor (an flock on it goes with it) and leaves it empty.
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace bagua::posix
