// Reads the reply to MGET (a RESP2 array of bulk strings) from a blocking
// socket, each value straight into a buffer of its own (from a ValuePool):
// the kernel's copy is the only one. hiredis's parser copies each value twice (into its input
// buffer, then into a reply object), which for samples of hundreds of KiB
// costs more than the round trip a batch saves. Headers and small values
// pass through one buffer of `bufferBytes`.
//
// Relies on request/response order: the server sends nothing it was not
// asked for, so after a reply nothing is left in the buffer for hiredis.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/data/value_pool.h"

namespace bagua {

class RespArrayReader {
 public:
  enum class Status { kOk, kClosed, kTimedOut, kIoError, kServerError, kProtocolError };
  // A value's bytes, owned (shared with whoever hands them on).
  struct Value {
    std::shared_ptr<char[]> bytes;
    size_t size = 0;
  };

  explicit RespArrayReader(size_t bufferBytes) : buffer_(bufferBytes) {}

  // Reads an array of `expected` bulk strings from `fd` into `values` (nullopt
  // for a nil), their buffers taken from `pool`. kServerError: the server answered with an error,
  // whose text is in `error`; otherwise `error` says what went wrong.
  Status read(int fd, size_t expected, ValuePool& pool, std::vector<std::optional<Value>>& values,
              std::string& error);
  // Forgets unread bytes: those of a connection that is gone (a reply cut
  // off by a timeout must not prefix the next connection's reply).
  void reset() { begin_ = end_ = 0; }

 private:
  Status fill(int fd, std::string& error);
  Status line(int fd, std::string_view& out, std::string& error);
  Status exact(int fd, char* to, size_t n, std::string& error);

  std::vector<char> buffer_;
  size_t begin_ = 0;  // unread bytes are buffer_[begin_, end_)
  size_t end_ = 0;
};

}  // namespace bagua
