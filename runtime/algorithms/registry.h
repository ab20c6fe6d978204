// The algorithm registry: the one place that lists the algorithms users pick
// by name. Each entry holds what the caller needs to drive it (which tensors
// it communicates and at which point of the training step), the option
// schema (name, type by its default value, one-line doc) and a factory.
// Python's algorithm classes, BaguaDistributedDataParallel(algorithm="..."),
// Lightning's strategy and every error message read it; entries without a
// factory are Bagua's algorithms not built yet (create() says so and names
// what exists).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "runtime/algorithms/algorithm.h"

namespace bagua {

// Which tensors an algorithm communicates.
enum class Communicates { kGradients, kWeights, kOptimizerState };

// When the runtime hands them over.
enum class Trigger {
  kTensorReady,         // as each tensor's value is final (overlaps backward)
  kBeforeForward,       // at the start of the step (overlaps forward and backward)
  kAfterOptimizerStep,  // once the optimizer updated the weights
  kBackground,          // on its own thread, not tied to the step
};

// An option's value; the default's alternative is the option's type.
using OptionValue = std::variant<bool, int64_t, double, std::string>;
using OptionMap = std::map<std::string, OptionValue>;

struct OptionSpec {
  std::string name;
  OptionValue defaultValue;
  std::string doc;  // one line
};

struct AlgorithmInfo {
  std::string name;         // what users pass: "bytegrad"
  std::string description;  // one line
  Communicates communicates = Communicates::kGradients;
  Trigger trigger = Trigger::kTensorReady;
  std::vector<OptionSpec> options;
  // Checks values the types cannot (ranges, choices); InvalidArgument naming
  // the option. Optional.
  std::function<void(const OptionMap&)> validate;
  // Builds the algorithm from complete, checked options; empty while the
  // algorithm is not built yet.
  std::function<std::shared_ptr<Algorithm>(const OptionMap&)> factory;
};

class AlgorithmRegistry {
 public:
  // Bagua's algorithms, in the original's order, plus anything add()ed.
  static AlgorithmRegistry& global();

  // Adds an entry; a name already present is InvalidArgument.
  void add(AlgorithmInfo info);
  // The entry for `name`; unknown names are InvalidArgument listing the known.
  const AlgorithmInfo& find(const std::string& name) const;
  // Every entry, in registration order.
  const std::vector<AlgorithmInfo>& all() const { return entries_; }
  // Names of the entries that have a factory.
  std::vector<std::string> available() const;
  // `options` checked against the schema (unknown name or wrong type is
  // InvalidArgument naming the option and the algorithm), defaults filled in.
  OptionMap resolve(const std::string& name, const OptionMap& options) const;
  // Builds the algorithm; an entry without a factory is NotAvailable.
  std::shared_ptr<Algorithm> create(const std::string& name, const OptionMap& options) const;

 private:
  std::vector<AlgorithmInfo> entries_;
};

// Typed access to resolved options (the schema guarantees presence and type).
bool optionBool(const OptionMap& options, const std::string& name);
int64_t optionInt(const OptionMap& options, const std::string& name);
double optionDouble(const OptionMap& options, const std::string& name);
const std::string& optionString(const OptionMap& options, const std::string& name);

// "bool", "int", "float" or "str": the option type names users see.
const char* optionTypeName(const OptionValue& value);
const char* communicatesName(Communicates what);
const char* triggerName(Trigger when);

}  // namespace bagua
