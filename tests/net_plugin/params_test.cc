// Knob parsing, and docs/env.md documenting every knob.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "net_plugin/base/params.h"

namespace bagua::net {
namespace {

TEST(ParseBytes, AcceptsSuffixes) {
  size_t v = 0;
  EXPECT_TRUE(parseBytes("4096", &v));
  EXPECT_EQ(v, 4096u);
  EXPECT_TRUE(parseBytes("256K", &v));
  EXPECT_EQ(v, 256u << 10);
  EXPECT_TRUE(parseBytes("4M", &v));
  EXPECT_EQ(v, 4u << 20);
  EXPECT_TRUE(parseBytes("1G", &v));
  EXPECT_EQ(v, 1u << 30);
}

TEST(ParseCpuList, AcceptsRangesAndSingles) {
  std::vector<int> cpus;
  EXPECT_TRUE(parseCpuList("0-3,8,10-11", &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(parseCpuList("5", &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{5}));
}

TEST(ParseCpuList, RejectsGarbage) {
  std::vector<int> cpus{42};
  for (const char* bad : {"", ",", "1,", "a", "3-1", "1-", "-1", "1-2-3", "4096", "0,x"}) {
    EXPECT_FALSE(parseCpuList(bad, &cpus)) << bad;
  }
  EXPECT_EQ(cpus, (std::vector<int>{42})) << "a rejected list leaves the output alone";
}

TEST(ParseBytes, RejectsGarbage) {
  size_t v = 0;
  for (const char* bad : {"", "-1", "abc", "4X", "12MB", "99999999999999999999G"}) {
    EXPECT_FALSE(parseBytes(bad, &v)) << bad;
  }
}

TEST(EnvDoc, EveryKnobIsDocumented) {
  std::ifstream file(BAGUA_SOURCE_ROOT "/docs/env.md");
  ASSERT_TRUE(file.good()) << "docs/env.md is missing";
  std::stringstream text;
  text << file.rdbuf();
  for (const std::string& name : paramNames()) {
    EXPECT_NE(text.str().find(name), std::string::npos) << name << " is not in docs/env.md";
  }
}

}  // namespace
}  // namespace bagua::net
