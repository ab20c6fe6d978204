// Fork-per-rank support: a pipe to exchange bytes (listen handles) with a
// child process (posix::ChildProcess, which the tests name ChildProcess).
// The child must not touch plugin state created by the parent (fork copies
// no threads), so tests fork before creating comms, and children report
// through exit codes.
#pragma once

#include <chrono>
#include <cstddef>

#include "posix/child_process.h"

namespace bagua::net::testing {

using posix::ChildProcess;

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

}  // namespace bagua::net::testing
