// Errors of libbagua: a small exception hierarchy stamped with file:line,
// ENFORCE-style checks, and CUDA_CHECK / NCCL_CHECK that turn status codes
// into exceptions. Policy: docs/errors.md ("Runtime"). Bad input gets a
// message naming the value and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace bagua {

// Base of every error libbagua throws.
class Error : public std::runtime_error {
 public:
  Error(const std::string& message, const char* file, int line)
      : std::runtime_error(message + " (" + file + ":" + std::to_string(line) + ")") {}
};

// The caller passed something malformed or unsupported (a dtype, a size, a
// registration that differs between ranks).
class InvalidArgument : public Error {
  using Error::Error;
};

// A wait (rendezvous, collective, watchdog) ran out of time; the message says
// what was pending.
class TimeoutError : public Error {
  using Error::Error;
};

// A communication library or peer failed (NCCL, Gloo, a closed socket).
class CommError : public Error {
  using Error::Error;
};

// A feature that exists in Bagua but is not built in this version (or this
// build): the message names what is available instead.
class NotAvailable : public Error {
  using Error::Error;
};

// A CUDA call failed.
class CudaError : public Error {
  using Error::Error;
};

namespace detail {
[[noreturn]] inline void throwInvalid(const std::string& message, const char* file, int line) {
  throw InvalidArgument(message, file, line);
}
}  // namespace detail

}  // namespace bagua

#define BAGUA_THROW(Type, message) throw ::bagua::Type((message), __FILE__, __LINE__)

// Throws InvalidArgument(message) unless `cond` holds. `message` is any
// expression convertible to std::string, evaluated only on failure.
#define BAGUA_ENFORCE(cond, message)                                           \
  do {                                                                         \
    if (!(cond)) ::bagua::detail::throwInvalid((message), __FILE__, __LINE__); \
  } while (false)
