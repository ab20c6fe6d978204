// QAdam: the registry entry; the communication is ByteGrad's.
#include "runtime/algorithms/qadam.h"

#include "runtime/algorithms/bytegrad.h"

namespace bagua {

AlgorithmInfo qAdamInfo() {
  AlgorithmInfo info;
  info.name = "qadam";
  info.description = "QAdam: Adam whose momentum is averaged in 8 bits after a warm-up";
  info.communicates = Communicates::kOptimizerState;
  info.trigger = Trigger::kTensorReady;
  info.options = {
      {"hierarchical", true, "average inside a node first, then among node leaders"},
      {"error_feedback", false, "carry the momentum's quantization error into the next step"},
  };
  info.factory = [](const OptionMap& o) {
    ByteGrad::Options options;
    options.average = true;
    options.errorFeedback = optionBool(o, "error_feedback");
    return std::make_shared<ByteGrad>(options);
  };
  return info;
}

}  // namespace bagua
