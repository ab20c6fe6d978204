// Support for the store tests: temporary directories, free loopback ports,
// raw sockets for sending the server bytes no TcpStore would send, and
// elapsed time. Forked children are posix::ChildProcess and
// posix::runLocalRanks; gtest assertions stay in the parent.
#pragma once

#include <cstdint>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace bagua::store_testing {

// The bytes of a string (store values are bytes).
inline std::vector<uint8_t> bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

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

// A blocking loopback socket connected to `port`; -1 on failure.
int connectRaw(int port);
// Writes all of `bytes`; false on error.
bool sendRaw(int fd, const std::vector<uint8_t>& bytes);
// True when the peer closes `fd` (EOF or reset) within `timeout`; bytes the
// server sends before closing are skipped.
bool closedByPeer(int fd, std::chrono::milliseconds timeout);

// Seconds since `start` (a steady_clock time).
double secondsSince(std::chrono::steady_clock::time_point start);

// Polls `condition` every millisecond until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

}  // namespace bagua::store_testing
