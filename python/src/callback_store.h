// A bagua::Store backed by a Python object with torch.distributed's Store
// methods (set, get, add, wait): libbagua then meets its peers through the
// store torch.distributed (or Lightning) already created, with no second
// port. Every call takes the GIL.
#pragma once

#include <cstdint>

#include <nanobind/nanobind.h>

#include "runtime/store/store.h"

namespace bagua::python {

class CallbackStore final : public Store {
 public:
  explicit CallbackStore(nanobind::object store) : store_(std::move(store)) {}
  ~CallbackStore() override;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

 private:
  nanobind::object store_;
};

}  // namespace bagua::python
