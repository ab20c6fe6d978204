// Support for the store tests: temporary directories, free loopback ports,
// forked children that report an exit code and a message, and raw sockets
// for sending the server bytes no TcpStore would send. Children report
// through their exit code and a pipe; gtest assertions stay in the parent.
#pragma once

#include <cstdint>

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace bagua::store_testing {

// A fresh directory under /tmp, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A loopback port that was free a moment ago (bind to port 0, read it back,
// close). The kernel hands out ephemeral ports in turn, so reuse soon after
// is unlikely.
int pickFreePort();

struct ChildResult {
  int exitCode = -1;  // 0 success, 128+signal when killed, -1 still running at timeout
  std::string message;
};

// A forked process running `body`; its return value is the exit code, and an
// exception's text comes back as the message (exit code 100).
class Child {
 public:
  explicit Child(const std::function<int()>& body);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  void kill(int signal);
  // Reaps the child within `timeout` (killing it if still running).
  ChildResult wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int messageFd_ = -1;
  bool reaped_ = false;
};

// Runs `body(i)` in `n` children at once and reaps them all within `timeout`.
std::vector<ChildResult> runChildren(int n, const std::function<int(int)>& body,
                                     std::chrono::milliseconds timeout);

// "child 1: exit 100: <message>" for each child that did not exit with 0.
std::string describeFailures(const std::vector<ChildResult>& results);

// A blocking loopback socket connected to `port`; -1 on failure.
int connectRaw(int port);
// Writes all of `bytes`; false on error.
bool sendRaw(int fd, const std::vector<uint8_t>& bytes);
// True when the peer closes `fd` (EOF or reset) within `timeout`; bytes the
// server sends before closing are skipped.
bool closedByPeer(int fd, std::chrono::milliseconds timeout);

// Polls `condition` every millisecond until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

}  // namespace bagua::store_testing
