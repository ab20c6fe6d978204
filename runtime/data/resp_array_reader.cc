// RespArrayReader: a line reader over one buffer, and values received
// directly into their own allocations once their length is known.
#include "runtime/data/resp_array_reader.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace bagua {
namespace {

// "<prefix><integer>" -> the integer, or nullopt.
std::optional<long long> header(std::string_view line, char prefix) {
  if (line.empty() || line[0] != prefix) return std::nullopt;
  long long n = 0;
  auto [end, ec] = std::from_chars(line.data() + 1, line.data() + line.size(), n);
  if (ec != std::errc() || end != line.data() + line.size()) return std::nullopt;
  return n;
}

}  // namespace

RespArrayReader::Status RespArrayReader::fill(int fd, std::string& error) {
  if (begin_ > 0) {  // keep the unread bytes at the front
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) {
    error = "a reply line longer than " + std::to_string(buffer_.size()) + " bytes";
    return Status::kProtocolError;
  }
  for (;;) {
    ssize_t n = ::read(fd, buffer_.data() + end_, buffer_.size() - end_);
    if (n > 0) {
      end_ += static_cast<size_t>(n);
      return Status::kOk;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      error = "the server closed the connection";
      return Status::kClosed;
    }
    error = errno == EAGAIN || errno == EWOULDBLOCK ? "timed out" : std::strerror(errno);
    return errno == EAGAIN || errno == EWOULDBLOCK ? Status::kTimedOut : Status::kIoError;
  }
}

RespArrayReader::Status RespArrayReader::line(int fd, std::string_view& out, std::string& error) {
  for (;;) {
    std::string_view unread(buffer_.data() + begin_, end_ - begin_);
    if (auto cr = unread.find("\r\n"); cr != std::string_view::npos) {
      out = unread.substr(0, cr);
      begin_ += cr + 2;
      return Status::kOk;
    }
    if (Status s = fill(fd, error); s != Status::kOk) return s;
  }
}

RespArrayReader::Status RespArrayReader::exact(int fd, char* to, size_t n, std::string& error) {
  size_t buffered = std::min(n, end_ - begin_);
  std::memcpy(to, buffer_.data() + begin_, buffered);
  begin_ += buffered;
  for (size_t got = buffered; got < n;) {  // the rest straight from the socket
    ssize_t r = ::read(fd, to + got, n - got);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else if (r == 0) {
      error = "the server closed the connection";
      return Status::kClosed;
    } else {
      bool timedOut = errno == EAGAIN || errno == EWOULDBLOCK;
      error = timedOut ? "timed out" : std::strerror(errno);
      return timedOut ? Status::kTimedOut : Status::kIoError;
    }
  }
  return Status::kOk;
}

RespArrayReader::Status RespArrayReader::read(int fd, size_t expected, ValuePool& pool,
                                              std::vector<std::optional<Value>>& values,
                                              std::string& error) {
  values.assign(expected, std::nullopt);
  std::string_view text;
  if (Status s = line(fd, text, error); s != Status::kOk) return s;
  if (!text.empty() && text[0] == '-') {
    error = std::string(text.substr(1));
    return Status::kServerError;
  }
  auto count = header(text, '*');
  if (!count || *count != static_cast<long long>(expected)) {
    error = "expected an array of " + std::to_string(expected) + " values, got '" +
            std::string(text.substr(0, 64)) + "'";
    return Status::kProtocolError;
  }
  for (size_t i = 0; i < expected; ++i) {
    if (Status s = line(fd, text, error); s != Status::kOk) return s;
    auto size = header(text, '$');
    if (!size || *size < -1) {
      error = "expected a bulk string, got '" + std::string(text.substr(0, 64)) + "'";
      return Status::kProtocolError;
    }
    if (*size == -1) continue;  // nil: no such key
    Value v{pool.take(static_cast<size_t>(*size) + 2), static_cast<size_t>(*size)};
    if (Status s = exact(fd, v.bytes.get(), v.size + 2, error); s != Status::kOk) return s;
    if (v.bytes[v.size] != '\r' || v.bytes[v.size + 1] != '\n') {
      error = "a bulk string of " + std::to_string(v.size) + " bytes does not end with CRLF";
      return Status::kProtocolError;
    }
    values[i] = std::move(v);
  }
  return Status::kOk;
}

}  // namespace bagua
