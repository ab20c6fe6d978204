// Fork-per-rank support: run a function in a child process, exchange bytes
// with it over a pipe, kill it, and reap it with a deadline. The child must
// not touch plugin state created by the parent (fork copies no threads), so
// tests fork before creating comms, and children report through exit codes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>

namespace bagua::net::testing {

// A one-way byte channel; both ends exist in parent and child after fork.
class Pipe {
 public:
  Pipe();
  ~Pipe();
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  // Writes all of `data`; false on error.
  bool write(const void* data, size_t size);
  // Reads exactly `size` bytes within `timeout`; false on EOF, error or timeout.
  bool read(void* data, size_t size, std::chrono::milliseconds timeout);

 private:
  int fds_[2] = {-1, -1};
};

class ChildProcess {
 public:
  // Forks; the child runs `body` and exits with its return value (127 when
  // it throws). The parent gets the handle.
  explicit ChildProcess(const std::function<int()>& body);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void kill(int signal);
  // Exit code, 128 + signal when killed, or -1 if still running at `timeout`
  // (the child is then killed).
  int wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

}  // namespace bagua::net::testing
