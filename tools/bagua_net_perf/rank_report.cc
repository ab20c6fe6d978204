// See rank_report.h. Format, one item per line:
//   rank R
//   transport <text to end of line>
//   size S active A receiver V iters N seconds T cpu C bytes B wrong W sizeerr E lat K v1 .. vK
#include "tools/bagua_net_perf/rank_report.h"

#include <iomanip>
#include <sstream>

#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {

std::string serializeRankReport(const RankReport& report) {
  std::ostringstream out;
  out << std::setprecision(17);
  out << "rank " << report.rank << "\n";
  out << "transport " << report.transport << "\n";
  for (const SizeResult& r : report.sizes) {
    out << "size " << r.size << " active " << r.active << " receiver " << r.receiver << " iters "
        << r.iters << " seconds " << r.seconds << " cpu " << r.cpuSeconds << " bytes "
        << r.bytesMoved << " wrong " << r.wrongBytes << " sizeerr " << r.sizeErrors << " lat "
        << r.latencyUs.size();
    for (double v : r.latencyUs) out << " " << v;
    out << "\n";
  }
  return out.str();
}

RankReport parseRankReport(const std::string& text) {
  RankReport report;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "rank") {
      fields >> report.rank;
    } else if (key == "transport") {
      report.transport = line.size() > 10 ? line.substr(10) : "";
    } else if (key == "size") {
      SizeResult r;
      std::string name;
      size_t samples = 0;
      fields >> r.size >> name >> r.active >> name >> r.receiver >> name >> r.iters >> name >>
          r.seconds >> name >> r.cpuSeconds >> name >> r.bytesMoved >> name >> r.wrongBytes >>
          name >> r.sizeErrors >> name >> samples;
      r.latencyUs.resize(samples);
      for (double& v : r.latencyUs) fields >> v;
      if (!fields) TOOL_THROW(ToolError, "malformed rank result line: " + line.substr(0, 80));
      report.sizes.push_back(std::move(r));
    } else if (!key.empty()) {
      TOOL_THROW(ToolError, "unknown rank result line: " + line.substr(0, 80));
    }
  }
  return report;
}

}  // namespace bagua::net_perf
