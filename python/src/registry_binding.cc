// bagua._C.algorithm_registry(): the runtime's algorithm registry as plain
// Python data, the only list of algorithm names the Python layer reads.
#include "python/src/registry_binding.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>

#include "runtime/algorithms/registry.h"

namespace nb = nanobind;

namespace bagua::python {
namespace {

nb::list registryEntries() {
  nb::list out;
  for (const AlgorithmInfo& info : AlgorithmRegistry::global().all()) {
    nb::list options;
    for (const OptionSpec& spec : info.options) {
      nb::dict option;
      option["name"] = spec.name;
      option["default"] = nb::cast(spec.defaultValue);
      option["type"] = optionTypeName(spec.defaultValue);
      option["doc"] = spec.doc;
      options.append(option);
    }
    nb::dict entry;
    entry["name"] = info.name;
    entry["description"] = info.description;
    entry["communicates"] = communicatesName(info.communicates);
    entry["trigger"] = triggerName(info.trigger);
    entry["available"] = static_cast<bool>(info.factory);
    entry["options"] = options;
    out.append(entry);
  }
  return out;
}

}  // namespace

void bindRegistry(nb::module_& m) {
  m.def("algorithm_registry", &registryEntries,
        "Every algorithm of the runtime's registry: name, description, communicates, trigger, "
        "available, options (name, default, type, doc).");
  m.def(
      "check_algorithm_options",
      [](const std::string& name, const OptionMap& options) {
        return AlgorithmRegistry::global().resolve(name, options);
      },
      nb::arg("name"), nb::arg("options"),
      "The options with defaults filled in; unknown names or wrong types raise ValueError.");
}

}  // namespace bagua::python
