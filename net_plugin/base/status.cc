// Names for Status values and errno formatting.
#include "net_plugin/base/status.h"

#include <cstring>

namespace bagua::net {

const char* statusName(Status status) {
  switch (status) {
    case Status::kOk:
      return "success";
    case Status::kSystemError:
      return "system error";
    case Status::kInternalError:
      return "internal error";
    case Status::kInvalidArgument:
      return "invalid argument";
    case Status::kInvalidUsage:
      return "invalid usage";
    case Status::kRemoteError:
      return "remote error";
  }
  return "unknown status";
}

std::string errnoMessage(const std::string& what, int err) {
  char buf[128];
  // GNU strerror_r may return a static string instead of filling buf.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return what + ": " + text + " (errno " + std::to_string(err) + ")";
}

}  // namespace bagua::net
