// The original Bagua-Net's knob names: the table of knob_aliases.def as data,
// the lookup that prefers our names, and the report logParams() logs.
#include "net_plugin/base/knob_aliases.h"

#include <cstdlib>
#include <cstring>

namespace bagua::net {

const std::vector<KnobAlias>& knobAliases() {
  static const std::vector<KnobAlias> table = {
#define BAGUA_NET_KNOB_ALIAS(name, ours, note) KnobAlias{#name, #ours, note},
#define BAGUA_NET_KNOB_IGNORED(name, why) KnobAlias{#name, nullptr, why},
#include "net_plugin/base/knob_aliases.def"
#undef BAGUA_NET_KNOB_IGNORED
#undef BAGUA_NET_KNOB_ALIAS
  };
  return table;
}

const char* envValue(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && value[0] != '\0') ? value : nullptr;
}

KnobSource knobEnvValue(const char* ours) {
  if (const char* value = envValue(ours)) return KnobSource{value, ours, false};
  for (const KnobAlias& alias : knobAliases()) {
    if (alias.ours == nullptr || std::strcmp(alias.ours, ours) != 0) continue;
    if (const char* value = envValue(alias.name)) return KnobSource{value, alias.name, true};
  }
  return KnobSource{};
}

AliasReport aliasReport() {
  AliasReport report;
  for (const KnobAlias& alias : knobAliases()) {
    const char* value = envValue(alias.name);
    if (value == nullptr) continue;
    std::string set = std::string(alias.name) + "=" + value + " (original Bagua-Net)";
    if (alias.ours == nullptr) {
      report.ignored += (report.ignored.empty() ? "" : ", ") + std::string(alias.name);
      continue;
    }
    const char* own = envValue(alias.ours);
    if (own == nullptr) {
      report.info.push_back(set + " taken as " + alias.ours + "=" + value + ": " + alias.note);
    } else if (std::strcmp(own, value) == 0) {
      report.info.push_back(set + " not needed: " + alias.ours + "=" + own + " is set too");
    } else {
      report.overridden.push_back(set + " ignored: " + alias.ours + "=" + own +
                                  " is set too, and our own name wins");
    }
  }
  if (!report.ignored.empty()) {
    report.ignored =
        "knobs of the original Bagua-Net with no counterpart here are ignored: " + report.ignored +
        " (docs/env.md, \"Migrating from the original Bagua-Net\")";
  }
  return report;
}

}  // namespace bagua::net
