// NCCL_SOCKET_IFNAME semantics and device discovery.
#include <gtest/gtest.h>

#include "net_plugin/base/devices.h"
#include "net_plugin/base/ifname_match.h"

namespace bagua::net {
namespace {

TEST(IfnameFilter, PrefixListMatchesPrefixes) {
  IfnameFilter f("eth,ib");
  EXPECT_TRUE(f.matches("eth0"));
  EXPECT_TRUE(f.matches("ib1"));
  EXPECT_FALSE(f.matches("lo"));
  EXPECT_FALSE(f.matches("veth0"));
}

TEST(IfnameFilter, CaretExcludes) {
  IfnameFilter f("^docker,lo");
  EXPECT_TRUE(f.matches("eth0"));
  EXPECT_FALSE(f.matches("docker0"));
  EXPECT_FALSE(f.matches("lo"));
}

TEST(IfnameFilter, EqualsMeansExactNames) {
  IfnameFilter exact("=eth0");
  EXPECT_TRUE(exact.matches("eth0"));
  EXPECT_FALSE(exact.matches("eth01"));
  IfnameFilter excludeExact("^=eth0");
  EXPECT_FALSE(excludeExact.matches("eth0"));
  EXPECT_TRUE(excludeExact.matches("eth01"));
}

TEST(IfnameFilter, PortSuffixIsIgnored) {
  IfnameFilter f("eth0:1234");
  EXPECT_TRUE(f.matches("eth0"));
}

TEST(Devices, LoopbackIsSelectableByName) {
  Params p;
  p.socketIfname = "=lo";
  std::vector<NetDevice> devices = discoverDevices(p);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].name, "lo");
  EXPECT_TRUE(devices[0].pciPath.empty()) << "lo is virtual";
  EXPECT_EQ(devices[0].speedMbps, kDefaultSpeedMbps) << "lo reports no speed";
}

TEST(Devices, SpeedOverrideWins) {
  Params p;
  p.socketIfname = "=lo";
  p.speedMbps = 25000;
  std::vector<NetDevice> devices = discoverDevices(p);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].speedMbps, 25000);
}

TEST(Devices, FamilyRestrictionApplies) {
  Params p;
  p.socketIfname = "=lo";
  p.socketFamily = "AF_INET";
  std::vector<NetDevice> devices = discoverDevices(p);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].addr.sa.sa_family, AF_INET);
}

TEST(Devices, Ipv6LoopbackIsUsable) {
  Params p;
  p.socketIfname = "=lo";
  p.socketFamily = "AF_INET6";
  std::vector<NetDevice> devices = discoverDevices(p);
  if (devices.empty()) GTEST_SKIP() << "no IPv6 on lo";
  EXPECT_EQ(devices[0].addr.sa.sa_family, AF_INET6);
}

TEST(Devices, NoMatchGivesNoDevice) {
  Params p;
  p.socketIfname = "=no-such-interface";
  EXPECT_TRUE(discoverDevices(p).empty());
}

}  // namespace
}  // namespace bagua::net
