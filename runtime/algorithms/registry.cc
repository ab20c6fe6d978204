// AlgorithmRegistry: Bagua's six algorithms and local SGD and DiLoCo (each
// from its file's info function), option checking, creation.
#include "runtime/algorithms/registry.h"

#include "runtime/algorithms/async_model_average.h"
#include "runtime/algorithms/bytegrad.h"
#include "runtime/algorithms/decentralized.h"
#include "runtime/algorithms/diloco.h"
#include "runtime/algorithms/gradient_allreduce.h"
#include "runtime/algorithms/local_sgd.h"
#include "runtime/algorithms/low_precision_decentralized.h"
#include "runtime/algorithms/qadam.h"
#include "runtime/common/error.h"

namespace bagua {
namespace {

AlgorithmRegistry makeGlobal() {
  AlgorithmRegistry registry;
  registry.add(gradientAllreduceInfo());
  registry.add(byteGradInfo());
  registry.add(decentralizedInfo());
  registry.add(lowPrecisionDecentralizedInfo());
  registry.add(qAdamInfo());
  registry.add(asyncModelAverageInfo());
  // Beyond Bagua: rare communication for slow links (issue 30).
  registry.add(localSgdInfo());
  registry.add(diLoCoInfo());
  return registry;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

template <typename T>
const T& typed(const OptionMap& options, const std::string& name) {
  auto it = options.find(name);
  BAGUA_ENFORCE(it != options.end(), "option '" + name + "' is not set");
  const T* value = std::get_if<T>(&it->second);
  BAGUA_ENFORCE(value != nullptr, "option '" + name + "' holds " + optionTypeName(it->second));
  return *value;
}

}  // namespace

AlgorithmRegistry& AlgorithmRegistry::global() {
  static AlgorithmRegistry registry = makeGlobal();
  return registry;
}

void AlgorithmRegistry::add(AlgorithmInfo info) {
  BAGUA_ENFORCE(!info.name.empty(), "an algorithm needs a name");
  for (const AlgorithmInfo& e : entries_) {
    BAGUA_ENFORCE(e.name != info.name, "algorithm '" + info.name + "' is already registered");
  }
  entries_.push_back(std::move(info));
}

const AlgorithmInfo& AlgorithmRegistry::find(const std::string& name) const {
  for (const AlgorithmInfo& e : entries_) {
    if (e.name == name) return e;
  }
  std::vector<std::string> known;
  for (const AlgorithmInfo& e : entries_) known.push_back(e.name);
  BAGUA_THROW(InvalidArgument, "unknown algorithm '" + name + "'; available: " +
                                   joined(available()) + " (all of Bagua's: " + joined(known) +
                                   ")");
}

std::vector<std::string> AlgorithmRegistry::available() const {
  std::vector<std::string> out;
  for (const AlgorithmInfo& e : entries_) {
    if (e.factory) out.push_back(e.name);
  }
  return out;
}

OptionMap AlgorithmRegistry::resolve(const std::string& name, const OptionMap& options) const {
  const AlgorithmInfo& info = find(name);
  OptionMap out;
  for (const OptionSpec& spec : info.options) out[spec.name] = spec.defaultValue;
  for (const auto& [key, value] : options) {
    auto it = out.find(key);
    if (it == out.end()) {
      std::vector<std::string> names;
      for (const OptionSpec& spec : info.options) names.push_back(spec.name);
      BAGUA_THROW(InvalidArgument, "algorithm '" + name + "' has no option '" + key +
                                       "'; its options: " + joined(names));
    }
    // An int is a valid float; nothing else converts.
    if (std::holds_alternative<double>(it->second) && std::holds_alternative<int64_t>(value)) {
      it->second = static_cast<double>(std::get<int64_t>(value));
      continue;
    }
    BAGUA_ENFORCE(it->second.index() == value.index(),
                  "option '" + key + "' of algorithm '" + name + "' expects " +
                      optionTypeName(it->second) + ", got " + optionTypeName(value));
    it->second = value;
  }
  if (info.validate) info.validate(out);
  return out;
}

std::shared_ptr<Algorithm> AlgorithmRegistry::create(const std::string& name,
                                                     const OptionMap& options) const {
  const AlgorithmInfo& info = find(name);
  OptionMap resolved = resolve(name, options);
  if (!info.factory) {
    BAGUA_THROW(NotAvailable, "algorithm '" + name +
                                  "' is one of Bagua's but is not available in this version "
                                  "yet; available: " +
                                  joined(available()));
  }
  return info.factory(resolved);
}

bool optionBool(const OptionMap& options, const std::string& name) {
  return typed<bool>(options, name);
}
int64_t optionInt(const OptionMap& options, const std::string& name) {
  return typed<int64_t>(options, name);
}
double optionDouble(const OptionMap& options, const std::string& name) {
  return typed<double>(options, name);
}
const std::string& optionString(const OptionMap& options, const std::string& name) {
  return typed<std::string>(options, name);
}

const char* optionTypeName(const OptionValue& value) {
  static const char* const kNames[] = {"bool", "int", "float", "str"};
  return kNames[value.index()];
}

const char* communicatesName(Communicates what) {
  switch (what) {
    case Communicates::kGradients:
      return "gradients";
    case Communicates::kWeights:
      return "weights";
    case Communicates::kOptimizerState:
      return "optimizer_state";
  }
  return "unknown";
}

const char* triggerName(Trigger when) {
  switch (when) {
    case Trigger::kTensorReady:
      return "tensor_ready";
    case Trigger::kBeforeForward:
      return "before_forward";
    case Trigger::kAfterOptimizerStep:
      return "after_optimizer_step";
    case Trigger::kBackground:
      return "background";
  }
  return "unknown";
}

}  // namespace bagua
