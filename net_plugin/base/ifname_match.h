// NCCL_SOCKET_IFNAME semantics, identical to NCCL's own socket transport:
// a comma-separated list of interface-name prefixes; a leading '^' turns the
// whole list into an exclusion list; a leading '=' (after any '^') makes the
// entries exact names instead of prefixes. "=lo" selects only lo, "^docker,lo"
// everything but docker* and lo*. An optional ":port" suffix is ignored.
#pragma once

#include <string>
#include <vector>

namespace bagua::net {

class IfnameFilter {
 public:
  explicit IfnameFilter(const std::string& spec);

  // True when the interface `name` is selected by the spec.
  bool matches(const std::string& name) const;

 private:
  std::vector<std::string> entries_;
  bool exclude_ = false;
  bool exact_ = false;
};

}  // namespace bagua::net
