// Internal status codes of the plugin and the setup-time exception.
//
// The hot path (isend, irecv, test and the engine) returns Status; setup code
// (listen, connect, accept, device discovery) may throw NetError. Only the
// API layer (net_plugin/api) turns either into ncclResult_t, and nothing else
// crosses the ABI. Values equal ncclResult_t's so the mapping is a cast.
#pragma once

#include <stdexcept>
#include <string>

namespace bagua::net {

enum class Status : int {
  kOk = 0,
  kSystemError = 2,      // a local system call failed (fds, memory, io_uring)
  kInternalError = 3,    // a bug in the plugin
  kInvalidArgument = 4,  // the caller passed something malformed
  kInvalidUsage = 5,     // well-formed but not allowed (e.g. send larger than receive)
  kRemoteError = 6,      // the peer closed, reset or sent something invalid
};

const char* statusName(Status status);

// Thrown at setup time only; the API layer logs `what()` and returns code().
class NetError : public std::runtime_error {
 public:
  NetError(Status code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Status code() const { return code_; }

 private:
  Status code_;
};

// "what failed: strerror(errno)" for system-call failures.
std::string errnoMessage(const std::string& what, int err);

}  // namespace bagua::net
