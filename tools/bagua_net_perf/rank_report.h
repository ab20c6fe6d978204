// What one rank process hands back to the launcher: the transport it used and
// its measurement of every size. Stored as text in the run's file store
// ("result.<rank>"), so ranks on other hosts can report too.
#pragma once

#include <string>
#include <vector>

#include "tools/bagua_net_perf/patterns.h"

namespace bagua::net_perf {

struct RankReport {
  int rank = 0;
  std::string transport;  // Transport::describe()
  std::vector<SizeResult> sizes;
};

std::string serializeRankReport(const RankReport& report);

// Throws ToolError on malformed text.
RankReport parseRankReport(const std::string& text);

}  // namespace bagua::net_perf
