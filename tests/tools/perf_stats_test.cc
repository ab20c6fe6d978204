// bagua-net-perf's statistics: the median's confidence interval that decides
// a target, the per-round pairing of a configuration with the reference, and
// which configuration is the reference (--compare-to).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tools/bagua_net_perf/options.h"
#include "tools/bagua_net_perf/report.h"
#include "tools/bagua_net_perf/stats.h"
#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {
namespace {

using plugin_driver::UsageError;

std::vector<double> oneTo(int n) {  // n, n-1, ..., 1: the sort is exercised
  std::vector<double> values;
  for (int i = n; i >= 1; --i) values.push_back(i);
  return values;
}

TEST(MedianInterval, OrderStatisticsOfTheSignTest) {
  // 95%: n=6 -> [x1, x6] (miss 2/64); n=10 -> [x2, x9] (P(B<=1) = 11/1024,
  // P(B<=2) = 56/1024 > 0.025); n=20 -> [x6, x15] (P(B<=5) = 0.0207,
  // P(B<=6) = 0.0577).
  Interval six = medianInterval({6, 1, 5, 2, 4, 3});
  EXPECT_EQ(six.low, 1);
  EXPECT_EQ(six.high, 6);
  Interval ten = medianInterval({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_EQ(ten.low, 2);
  EXPECT_EQ(ten.high, 9);
  Interval twenty = medianInterval(oneTo(20));
  EXPECT_EQ(twenty.low, 6);
  EXPECT_EQ(twenty.high, 15);
}

TEST(MedianInterval, NarrowsWithMoreRoundsAndWidensWithConfidence) {
  Interval n100 = medianInterval(oneTo(100));
  EXPECT_EQ(n100.low, 40);  // the textbook 95% ranks for n = 100: 40 and 61
  EXPECT_EQ(n100.high, 61);
  Interval wide = medianInterval(oneTo(100), 0.99);
  EXPECT_LT(wide.low, n100.low);
  EXPECT_GT(wide.high, n100.high);
  // Thousands of rounds must not underflow 2^-n.
  Interval n5000 = medianInterval(oneTo(5000));
  EXPECT_GT(n5000.low, 2400);
  EXPECT_LT(n5000.high, 2601);
}

TEST(MedianInterval, TooFewValuesGiveNoInterval) {
  Interval five = medianInterval({1, 2, 3, 4, 5});  // best coverage 1 - 2/32 < 95%
  EXPECT_TRUE(std::isnan(five.low));
  EXPECT_TRUE(std::isnan(five.high));
  EXPECT_TRUE(std::isnan(medianInterval({}).low));
  // Non-finite values (a rep that moved no bytes) are dropped before counting.
  double nan = std::nan("");
  EXPECT_TRUE(std::isnan(medianInterval({1, 2, 3, 4, 5, nan}).low));
  EXPECT_EQ(medianInterval({1, 2, 3, 4, 5, nan, 6}).high, 6);
}

Measure withBandwidth(double gbps) {
  Measure m;
  m.algbwGBps = gbps;
  m.cpuSecPerGB = 1 / gbps;
  return m;
}

TEST(PairedRatios, DividesRoundByRoundSoDriftCancels) {
  // The machine halves its speed in round 2 for both: the ratio stays 1.5.
  std::vector<Measure> plugin = {withBandwidth(3), withBandwidth(1.5), withBandwidth(3)};
  std::vector<Measure> tcp = {withBandwidth(2), withBandwidth(1), withBandwidth(2)};
  std::vector<double> bw = pairedRatios(plugin, tcp, &Measure::algbwGBps);
  ASSERT_EQ(bw.size(), 3u);
  for (double r : bw) EXPECT_DOUBLE_EQ(r, 1.5);
  std::vector<double> cpu = pairedRatios(plugin, tcp, &Measure::cpuSecPerGB);
  for (double r : cpu) EXPECT_DOUBLE_EQ(r, 2.0 / 3.0);
}

TEST(PairedRatios, PairsOnlyCommonRoundsAndSkipsAnEmptyBaseline) {
  // A configuration that failed after 2 rounds pairs with the first 2 only;
  // a baseline round with nothing measured (NaN or 0) is no pair.
  std::vector<Measure> plugin = {withBandwidth(2), withBandwidth(4)};
  std::vector<Measure> tcp = {withBandwidth(1), withBandwidth(0), withBandwidth(1)};
  std::vector<double> bw = pairedRatios(plugin, tcp, &Measure::algbwGBps);
  ASSERT_EQ(bw.size(), 1u);
  EXPECT_DOUBLE_EQ(bw[0], 2);
}

Options parse(std::vector<std::string> args) {
  args.insert(args.begin(), "bagua-net-perf");
  args.insert(args.end(), {"--plugin", "/nonexistent/libnccl-net.so"});  // not loaded here
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  Options options;
  parseOptions(static_cast<int>(argv.size()), argv.data(), &options);
  return options;
}

TEST(ReferenceConfig, TcpByDefaultTheNamedOneWithCompareToAndNoneAlone) {
  Options withTcp = parse({"--configs", "a=;b=BAGUA_NET_STREAMS=1", "--baseline"});
  EXPECT_EQ(withTcp.configs[referenceConfig(withTcp)].name, "tcp");
  Options named =
      parse({"--configs", "a=;b=BAGUA_NET_STREAMS=1", "--baseline", "--compare-to", "b"});
  EXPECT_EQ(named.configs[referenceConfig(named)].name, "b");
  Options noTcp = parse({"--configs", "a=;b=BAGUA_NET_STREAMS=1"});
  EXPECT_EQ(referenceConfig(noTcp), noTcp.configs.size());  // nothing to divide by
  Options alone = parse({"--baseline-only"});
  EXPECT_EQ(referenceConfig(alone), alone.configs.size());
}

TEST(ReferenceConfig, AnUnknownNameIsAUsageErrorThatNamesIt) {
  try {
    parse({"--configs", "a=", "--baseline", "--compare-to", "epoll"});
    FAIL() << "--compare-to epoll was accepted without such a configuration";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--compare-to: no configuration named 'epoll'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace bagua::net_perf
