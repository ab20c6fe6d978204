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

// Distribution-free confidence interval for the median of the finite values:
// the order statistics x(j) and x(n+1-j), with j the largest index whose
// two-sided miss chance, 2 P(Binomial(n, 1/2) <= j-1), is at most
// 1 - confidence. NaN bounds when no j qualifies (fewer than 6 values at 95%).
struct Interval {
  double low;
  double high;
};
Interval medianInterval(std::vector<double> values, double confidence = 0.95);

// Nearest-rank percentile p (0 < p <= 100) of values; NaN when empty.
double percentile(std::vector<double> values, double p);

}  // namespace bagua::net_perf
