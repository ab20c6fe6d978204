// Sets (or unsets) an environment variable for one scope and restores it
// after, so the process's own knobs (params(), read once by other tests)
// never see it. Header-only: unit tests use it without the test-support
// library.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace bagua::net {

class ScopedEnv {
 public:
  // `value` nullptr unsets the variable for the scope.
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace bagua::net
