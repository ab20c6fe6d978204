// Formatting helpers for errors.h.
#include "tools/plugin_driver/errors.h"

#include <cstring>

namespace bagua::plugin_driver {

std::string errnoText(const std::string& what, int err) { return what + ": " + std::strerror(err); }

std::string located(const char* file, int line, const std::string& message) {
  const char* slash = std::strrchr(file, '/');
  return std::string(slash ? slash + 1 : file) + ":" + std::to_string(line) + ": " + message;
}

}  // namespace bagua::plugin_driver
