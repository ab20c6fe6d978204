// See stats.h.
#include "tools/bagua_net_perf/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace bagua::net_perf {

namespace {

void dropNonFinite(std::vector<double>& values) {
  values.erase(
      std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
      values.end());
}

// P(Binomial(n, 1/2) = k), in log space so that large n cannot underflow.
double binomialHalfPmf(size_t n, size_t k) {
  double logChoose = std::lgamma(static_cast<double>(n) + 1) -
                     std::lgamma(static_cast<double>(k) + 1) -
                     std::lgamma(static_cast<double>(n - k) + 1);
  return std::exp(logChoose - static_cast<double>(n) * std::log(2.0));
}

}  // namespace

Summary summarize(std::vector<double> values) {
  dropNonFinite(values);
  if (values.empty()) {
    double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan, nan};
  }
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return {values.front(), median, values.back()};
}

Interval medianInterval(std::vector<double> values, double confidence) {
  dropNonFinite(values);
  double nan = std::numeric_limits<double>::quiet_NaN();
  double missEachSide = (1 - confidence) / 2;
  size_t n = values.size();
  size_t j = 0;    // 1-based index of the lower bound; 0: none qualifies
  double cdf = 0;  // P(B <= i)
  for (size_t i = 0; i < n / 2; ++i) {
    cdf += binomialHalfPmf(n, i);
    if (cdf > missEachSide) break;
    j = i + 1;
  }
  if (j == 0) return {nan, nan};
  std::sort(values.begin(), values.end());
  return {values[j - 1], values[n - j]};
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

}  // namespace bagua::net_perf
