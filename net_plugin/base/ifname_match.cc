// Parsing and matching of NCCL_SOCKET_IFNAME-style interface lists.
#include "net_plugin/base/ifname_match.h"

namespace bagua::net {

IfnameFilter::IfnameFilter(const std::string& spec) {
  size_t pos = 0;
  if (pos < spec.size() && spec[pos] == '^') {
    exclude_ = true;
    ++pos;
  }
  if (pos < spec.size() && spec[pos] == '=') {
    exact_ = true;
    ++pos;
  }
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string entry = spec.substr(pos, comma - pos);
    size_t colon = entry.find(':');
    if (colon != std::string::npos) entry.resize(colon);
    if (!entry.empty()) entries_.push_back(entry);
    pos = comma + 1;
  }
}

bool IfnameFilter::matches(const std::string& name) const {
  bool listed = false;
  for (const std::string& entry : entries_) {
    bool hit = exact_ ? name == entry : name.compare(0, entry.size(), entry) == 0;
    if (hit) {
      listed = true;
      break;
    }
  }
  return exclude_ ? !listed : listed;
}

}  // namespace bagua::net
