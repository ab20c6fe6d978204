// Helpers for the API layer: exception catching and argument checks.
#pragma once

#include <exception>
#include <new>
#include <system_error>

#include "net_plugin/base/log.h"
#include "net_plugin/base/status.h"
#include "net_plugin/nccl/net_types.h"

namespace bagua::net::api {

// Runs `body(function)` (returning Status) and maps the outcome to
// ncclResult_t; no exception leaves this function.
template <typename Body>
ncclResult_t guarded(const char* function, Body&& body) noexcept {
  try {
    return static_cast<ncclResult_t>(body(function));
  } catch (const NetError& e) {
    BAGUA_WARN("%s: %s", function, e.what());
    return static_cast<ncclResult_t>(e.code());
  } catch (const std::bad_alloc&) {
    BAGUA_WARN("%s: out of memory", function);
    return ncclSystemError;
  } catch (const std::system_error& e) {  // e.g. std::thread when the process has no room left
    BAGUA_WARN("%s: %s", function, e.what());
    return ncclSystemError;
  } catch (const std::exception& e) {
    BAGUA_WARN("%s: internal error: %s", function, e.what());
    return ncclInternalError;
  } catch (...) {
    BAGUA_WARN("%s: internal error: unknown exception", function);
    return ncclInternalError;
  }
}

}  // namespace bagua::net::api

// Inside a guarded body (whose parameter is `fn`, the entry point's name):
// rejects a bad argument with a WARN naming the function and the problem.
#define BAGUA_CHECK_ARG(cond, fmt, ...)                                        \
  do {                                                                         \
    if (!(cond)) {                                                             \
      BAGUA_WARN("%s: invalid argument: " fmt, fn __VA_OPT__(, ) __VA_ARGS__); \
      return ::bagua::net::Status::kInvalidArgument;                           \
    }                                                                          \
  } while (false)
