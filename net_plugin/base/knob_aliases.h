// The original Bagua-Net's knob names (knob_aliases.def): which of ours each
// sets, or that it is ignored; and how the environment is read for a knob,
// its own name first, then its aliases.
//
// loadParams() reads every knob through knobEnvValue(); logParams() logs
// aliasReport(): one INFO line (INIT|NET) per alias set, one WARN naming the
// ignored names set.
#pragma once

#include <string>
#include <vector>

namespace bagua::net {

// One row of knob_aliases.def.
struct KnobAlias {
  const char* name;  // the original's name, e.g. "BAGUA_NET_NSTREAMS"
  const char* ours;  // the knob it sets, e.g. "BAGUA_NET_STREAMS"; nullptr when ignored
  const char* note;  // what ours means, or why it is ignored (one line)
};

// The alias table, in knob_aliases.def's order.
const std::vector<KnobAlias>& knobAliases();

// The value of environment variable `name`, or nullptr when it is unset or
// empty.
const char* envValue(const char* name);

// Where a knob's value comes from: its own variable, else the first alias of
// it that is set (our own name wins). `from` is the variable read, nullptr
// when neither is set.
struct KnobSource {
  const char* value = nullptr;
  const char* from = nullptr;
  bool isAlias = false;
};
KnobSource knobEnvValue(const char* ours);

// What the original's names set in the environment became, as log text.
struct AliasReport {
  // One per alias set: "BAGUA_NET_NSTREAMS=8 (original Bagua-Net) taken as
  // BAGUA_NET_STREAMS=8", or, when our name is set too, that ours wins.
  std::vector<std::string> info;
  // Aliases set that lose to our name with a different value (a WARN each).
  std::vector<std::string> overridden;
  // One line naming every ignored name set, or empty when none is.
  std::string ignored;
};
AliasReport aliasReport();

}  // namespace bagua::net
