// Errors of bagua-net-perf: one exception type per kind of failure, each
// stamped with file:line by the macros below, and the tool's exit codes.
//
// The tool is a setup-and-measure program, so it uses exceptions throughout;
// a rank process catches everything in rank_main.cc and turns it into an exit
// code, so nothing ever unwinds through the plugin's ABI.
#pragma once

#include <stdexcept>
#include <string>

namespace bagua::net_perf {

// Exit codes of the tool and of every rank process.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;     // plugin error, I/O error, timeout, crash
inline constexpr int kExitUsage = 2;     // bad command line
inline constexpr int kExitMismatch = 3;  // data check found wrong bytes

// Base of every error the tool raises itself.
class PerfError : public std::runtime_error {
 public:
  explicit PerfError(const std::string& message) : std::runtime_error(message) {}
};

// A bad command-line value; main prints it with a pointer to --help.
class UsageError : public PerfError {
 public:
  using PerfError::PerfError;
};

// A wait ran past --timeout; the message says what was awaited.
class TimeoutError : public PerfError {
 public:
  using PerfError::PerfError;
};

// A plugin function returned something other than ncclSuccess.
class PluginError : public PerfError {
 public:
  using PerfError::PerfError;
};

// "what: strerror(err)".
std::string errnoText(const std::string& what, int err);

// "file:line: message" (file reduced to its base name).
std::string located(const char* file, int line, const std::string& message);

}  // namespace bagua::net_perf

#define PERF_THROW(Type, message) \
  throw ::bagua::net_perf::Type(::bagua::net_perf::located(__FILE__, __LINE__, (message)))

#define PERF_ENFORCE(cond, message)              \
  do {                                           \
    if (!(cond)) PERF_THROW(PerfError, message); \
  } while (false)

// Throws PerfError with strerror(errno) when a system call returns < 0.
#define PERF_SYSCALL(call, what)                                                      \
  do {                                                                                \
    if ((call) < 0) PERF_THROW(PerfError, ::bagua::net_perf::errnoText(what, errno)); \
  } while (false)
