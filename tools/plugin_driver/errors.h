// Errors of the tools (bagua-net-perf, bagua-net-info): one exception type
// per kind of failure, each stamped with file:line by the macros below, and
// the tools' exit codes.
//
// The tools are setup-and-measure programs, so they use exceptions
// throughout; main() (and each bagua-net-perf rank process, in rank_main.cc)
// catches everything and turns it into an exit code, so nothing ever unwinds
// through the plugin's ABI.
#pragma once

#include <stdexcept>
#include <string>

namespace bagua::plugin_driver {

// Exit codes of the tools and of every bagua-net-perf rank process.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;     // plugin error, I/O error, timeout, crash
inline constexpr int kExitUsage = 2;     // bad command line
inline constexpr int kExitMismatch = 3;  // data check found wrong bytes

// Base of every error the tools raise themselves.
class ToolError : public std::runtime_error {
 public:
  explicit ToolError(const std::string& message) : std::runtime_error(message) {}
};

// A bad command-line value; main prints it with a pointer to --help.
class UsageError : public ToolError {
 public:
  using ToolError::ToolError;
};

// A wait ran past --timeout; the message says what was awaited.
class TimeoutError : public ToolError {
 public:
  using ToolError::ToolError;
};

// A plugin function returned something other than ncclSuccess.
class PluginError : public ToolError {
 public:
  using ToolError::ToolError;
};

// "what: strerror(err)".
std::string errnoText(const std::string& what, int err);

// "file:line: message" (file reduced to its base name).
std::string located(const char* file, int line, const std::string& message);

}  // namespace bagua::plugin_driver

#define TOOL_THROW(Type, message) \
  throw ::bagua::plugin_driver::Type(::bagua::plugin_driver::located(__FILE__, __LINE__, (message)))

#define TOOL_ENFORCE(cond, message)              \
  do {                                           \
    if (!(cond)) TOOL_THROW(ToolError, message); \
  } while (false)

// Throws ToolError with strerror(errno) when a system call returns < 0.
#define TOOL_SYSCALL(call, what)                                                           \
  do {                                                                                     \
    if ((call) < 0) TOOL_THROW(ToolError, ::bagua::plugin_driver::errnoText(what, errno)); \
  } while (false)
