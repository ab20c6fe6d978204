// CallbackStore: Python store calls under the GIL, Python errors as bagua errors.
#include "python/src/callback_store.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "runtime/common/error.h"

namespace nb = nanobind;

namespace bagua::python {
namespace {

nb::object timedelta(std::chrono::milliseconds timeout) {
  nb::object datetime = nb::module_::import_("datetime");
  return datetime.attr("timedelta")(nb::arg("milliseconds") = timeout.count());
}

// Runs `fn` holding the GIL; a Python exception becomes a bagua error (a
// store timeout becomes TimeoutError) that names the store operation.
template <typename Fn>
auto withGil(const std::string& what, Fn&& fn) {
  nb::gil_scoped_acquire gil;
  try {
    return fn();
  } catch (nb::python_error& e) {
    std::string message = what + ": " + e.what();
    bool timeout = message.find("imeout") != std::string::npos ||
                   message.find("timed out") != std::string::npos;
    if (timeout) BAGUA_THROW(TimeoutError, message);
    BAGUA_THROW(CommError, message);
  }
}

}  // namespace

CallbackStore::~CallbackStore() {
  nb::gil_scoped_acquire gil;
  store_.reset();
}

void CallbackStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  withGil("store set '" + key + "'", [&] {
    store_.attr("set")(key, nb::bytes(reinterpret_cast<const char*>(value.data()), value.size()));
    return 0;
  });
}

std::vector<uint8_t> CallbackStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  return withGil("store get '" + key + "'", [&] {
    store_.attr("wait")(std::vector<std::string>{key}, timedelta(timeout));
    nb::bytes value = nb::cast<nb::bytes>(store_.attr("get")(key));
    const auto* p = static_cast<const uint8_t*>(value.data());
    return std::vector<uint8_t>(p, p + value.size());
  });
}

int64_t CallbackStore::add(const std::string& key, int64_t delta) {
  return withGil("store add '" + key + "'",
                 [&] { return nb::cast<int64_t>(store_.attr("add")(key, delta)); });
}

void CallbackStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  withGil("store wait", [&] {
    store_.attr("wait")(keys, timedelta(timeout));
    return 0;
  });
}

}  // namespace bagua::python
