// Argument checks of the fused optimizers (optim_types.h).
#include <sstream>
#include <stdexcept>
#include <string>

#include "kernels/optim/optim_types.h"

namespace bagua::kernels::optim {
namespace {

const char* slotName(int s) {
  static const char* const kNames[kSlots] = {"param",  "grad",   "state0",
                                             "state1", "state2", "master"};
  return kNames[s];
}

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

}  // namespace

unsigned checkList(const char* op, const std::vector<TensorRef>& tensors, ListTypes types) {
  if (!isAlgorithmDType(types.param)) {
    fail(op, std::string("parameters of dtype ") + dtypeName(types.param) +
                 "; expected float32, float16 or bfloat16");
  }
  if (types.state != DType::kFloat32 && types.state != types.param) {
    fail(op, std::string("state of dtype ") + dtypeName(types.state) +
                 "; expected float32 or the parameters' dtype " + dtypeName(types.param));
  }
  if (tensors.empty()) fail(op, "an empty tensor list");
  unsigned mask = 0;
  for (int s = 0; s < kSlots; ++s) {
    const bool first = tensors.front().ptr[s] != nullptr;
    if ((s == kParam || s == kGrad) && !first) {
      fail(op, std::string("tensor 0 has no ") + slotName(s));
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      if ((tensors[i].ptr[s] != nullptr) != first) {
        std::ostringstream msg;
        msg << "tensor " << i << (first ? " lacks the " : " has a ") << slotName(s)
            << " that tensor 0 " << (first ? "has" : "lacks")
            << " (a slot is set for every tensor or for none)";
        fail(op, msg.str());
      }
    }
    if (first) mask |= 1u << s;
  }
  if ((mask & slotBit(kMaster)) != 0 && types.param == DType::kFloat32) {
    fail(op, "master weights for float32 parameters (they are for float16/bfloat16)");
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].numel == 0) {
      std::ostringstream msg;
      msg << "tensor " << i << " has 0 elements";
      fail(op, msg.str());
    }
  }
  return mask;
}

void checkSlots(const char* op, unsigned mask, SlotRule rule) {
  for (int s = kState0; s <= kState2; ++s) {
    const unsigned bit = 1u << s;
    if ((rule.required & bit) != 0 && (mask & bit) == 0) {
      fail(op, std::string("the list has no ") + slotName(s) + " (this optimizer needs it)");
    }
    if ((rule.forbidden & bit) != 0 && (mask & bit) != 0) {
      fail(op, std::string("the list has a ") + slotName(s) + " (this optimizer takes none)");
    }
  }
}

SlotRule sgdRule(const SgdArgs& a) {
  const unsigned s0 = slotBit(kState0);
  const unsigned rest = slotBit(kState1) | slotBit(kState2);
  return a.momentum != 0.0 ? SlotRule{s0, rest} : SlotRule{0u, s0 | rest};
}

SlotRule adamRule(const AdamArgs& a) {
  const unsigned moments = slotBit(kState0) | slotBit(kState1);
  return a.amsgrad ? SlotRule{moments | slotBit(kState2), 0u} : SlotRule{moments, slotBit(kState2)};
}

SlotRule adagradRule() { return SlotRule{slotBit(kState0), slotBit(kState1) | slotBit(kState2)}; }

SlotRule lambRule() { return SlotRule{slotBit(kState0) | slotBit(kState1), slotBit(kState2)}; }

}  // namespace bagua::kernels::optim
