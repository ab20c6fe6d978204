// Pipe.
#include "tests/net_plugin/support/pipe.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace bagua::net::testing {

Pipe::Pipe() {
  if (::pipe(fds_) != 0) fds_[0] = fds_[1] = -1;
}

Pipe::~Pipe() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

bool Pipe::write(const void* data, size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fds_[1], p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool Pipe::read(void* data, size_t size, std::chrono::milliseconds timeout) {
  auto* p = static_cast<char*>(data);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (size > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{fds_[0], POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
    ssize_t n = ::read(fds_[0], p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace bagua::net::testing
