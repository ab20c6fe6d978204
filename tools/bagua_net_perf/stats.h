// Small order statistics used by the report.
#pragma once

#include <vector>

namespace bagua::net_perf {

struct Summary {
  double min;
  double median;
  double max;
};

// min / median / max of the finite values (NaN everywhere when there are none).
Summary summarize(std::vector<double> values);

// Nearest-rank percentile p (0 < p <= 100) of values; NaN when empty.
double percentile(std::vector<double> values, double p);

}  // namespace bagua::net_perf
