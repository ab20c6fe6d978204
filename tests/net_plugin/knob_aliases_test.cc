// The original Bagua-Net's knob names: each alias sets our knob (parsed and
// checked as ours), our own name wins, malformed aliases are named, and the
// report says what each became and which names are ignored. The table
// itself: every alias names one of our knobs.
#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "net_plugin/base/knob_aliases.h"
#include "net_plugin/base/log.h"
#include "net_plugin/base/params.h"
#include "net_plugin/base/status.h"
#include "tests/net_plugin/support/scoped_env.h"

namespace bagua::net {
namespace {

// Every name of the alias table unset, whatever the test's environment had.
struct NoAliasesSet {
  std::vector<std::unique_ptr<ScopedEnv>> unset;
  NoAliasesSet() {
    for (const KnobAlias& alias : knobAliases()) {
      unset.push_back(std::make_unique<ScopedEnv>(alias.name, nullptr));
      if (alias.ours != nullptr) unset.push_back(std::make_unique<ScopedEnv>(alias.ours, nullptr));
    }
  }
};

TEST(KnobAliases, EveryAliasNamesOneOfOurKnobs) {
  std::set<std::string> ours(paramNames().begin(), paramNames().end());
  std::set<std::string> seen;
  for (const KnobAlias& alias : knobAliases()) {
    EXPECT_TRUE(seen.insert(alias.name).second) << alias.name << " is in the table twice";
    EXPECT_FALSE(ours.contains(alias.name)) << alias.name << " is one of our own knobs";
    if (alias.ours != nullptr) {
      EXPECT_TRUE(ours.contains(alias.ours))
          << alias.name << " maps to " << alias.ours << ", which is not in knobs.def";
    }
    EXPECT_GT(std::string(alias.note).size(), 10u) << alias.name << " needs a note";
  }
  // The original's names this plugin must know (BaguaSys/bagua, rust/bagua-net).
  for (const char* name : {"BAGUA_NET_NSTREAMS", "BAGUA_NET_MIN_CHUNKSIZE", "BAGUA_NET_IMPLEMENT",
                           "BAGUA_NET_TOKIO_WORKER_THREADS", "BAGUA_NET_JAEGER_ADDRESS",
                           "BAGUA_NET_PROMETHEUS_ADDRESS"}) {
    EXPECT_TRUE(seen.contains(name)) << name;
  }
}

TEST(KnobAliases, SetOurKnobs) {
  NoAliasesSet clean;
  ScopedEnv streams("BAGUA_NET_NSTREAMS", "8");
  ScopedEnv split("BAGUA_NET_MIN_CHUNKSIZE", "1048576");
  ScopedEnv threads("BAGUA_NET_TOKIO_WORKER_THREADS", "3");
  ScopedEnv implement("BAGUA_NET_IMPLEMENT", "TOKIO");
  Params p = loadParams();
  EXPECT_EQ(p.streams, 8);
  EXPECT_EQ(p.minSplitBytes, 1u << 20);
  EXPECT_EQ(p.threads, 3);
  EXPECT_EQ(p.engine, Params{}.engine) << "BAGUA_NET_IMPLEMENT maps to nothing";
  EXPECT_EQ(p.chunkBytes, Params{}.chunkBytes);
}

TEST(KnobAliases, OurOwnNameWins) {
  NoAliasesSet clean;
  ScopedEnv ours("BAGUA_NET_STREAMS", "2");
  ScopedEnv theirs("BAGUA_NET_NSTREAMS", "8");
  ScopedEnv oursSplit("BAGUA_NET_MIN_SPLIT_BYTES", "32K");
  ScopedEnv badTheirs("BAGUA_NET_MIN_CHUNKSIZE", "lots");
  Params p = loadParams();
  EXPECT_EQ(p.streams, 2);
  EXPECT_EQ(p.minSplitBytes, 32u << 10) << "an alias that loses is not even parsed";
}

TEST(KnobAliases, MalformedAliasIsNamed) {
  NoAliasesSet clean;
  ScopedEnv theirs("BAGUA_NET_NSTREAMS", "0");
  try {
    loadParams();
    FAIL() << "BAGUA_NET_NSTREAMS=0 loaded";
  } catch (const NetError& e) {
    EXPECT_EQ(e.code(), Status::kInvalidArgument);
    EXPECT_STREQ(e.what(),
                 "environment knob BAGUA_NET_NSTREAMS=\"0\" (the original Bagua-Net's name for "
                 "BAGUA_NET_STREAMS) is invalid: expected an integer in [1, 64]");
  }
}

TEST(KnobAliases, ReportSaysWhatEachBecame) {
  NoAliasesSet clean;
  EXPECT_TRUE(aliasReport().info.empty());
  EXPECT_TRUE(aliasReport().ignored.empty());

  ScopedEnv streams("BAGUA_NET_NSTREAMS", "8");
  ScopedEnv threads("BAGUA_NET_TOKIO_WORKER_THREADS", "3");
  ScopedEnv oursThreads("BAGUA_NET_THREADS", "3");
  ScopedEnv split("BAGUA_NET_MIN_CHUNKSIZE", "65535");
  ScopedEnv oursSplit("BAGUA_NET_MIN_SPLIT_BYTES", "128K");
  ScopedEnv implement("BAGUA_NET_IMPLEMENT", "BASIC");
  ScopedEnv jaeger("BAGUA_NET_JAEGER_ADDRESS", "host:6831");
  AliasReport report = aliasReport();
  EXPECT_EQ(report.info,
            (std::vector<std::string>{
                "BAGUA_NET_NSTREAMS=8 (original Bagua-Net) taken as BAGUA_NET_STREAMS=8: TCP "
                "streams per connection",
                "BAGUA_NET_TOKIO_WORKER_THREADS=3 (original Bagua-Net) not needed: "
                "BAGUA_NET_THREADS=3 is set too"}));
  EXPECT_EQ(report.overridden,
            (std::vector<std::string>{
                "BAGUA_NET_MIN_CHUNKSIZE=65535 (original Bagua-Net) ignored: "
                "BAGUA_NET_MIN_SPLIT_BYTES=128K is set too, and our own name wins"}));
  EXPECT_EQ(report.ignored,
            "knobs of the original Bagua-Net with no counterpart here are ignored: "
            "BAGUA_NET_IMPLEMENT, BAGUA_NET_JAEGER_ADDRESS (docs/env.md, \"Migrating from the "
            "original Bagua-Net\")");
}

// What logParams() logs, through the logger NCCL would give.
struct Logged {
  ncclDebugLogLevel level;
  unsigned long flags;
  std::string text;
};
std::vector<Logged>* gLogged = nullptr;

void recordLine(ncclDebugLogLevel level, unsigned long flags, const char*, int, const char* fmt,
                ...) {
  char text[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);
  if (gLogged != nullptr) gLogged->push_back(Logged{level, flags, text});
}

TEST(KnobAliases, LoggedAtInitOnceEach) {
  NoAliasesSet clean;
  ScopedEnv streams("BAGUA_NET_NSTREAMS", "6");
  ScopedEnv prometheus("BAGUA_NET_PROMETHEUS_ADDRESS", "http://u:p@host:9091");
  ScopedEnv implement("BAGUA_NET_IMPLEMENT", "TOKIO");
  std::vector<Logged> logged;
  gLogged = &logged;
  setLogger(&recordLine);
  logParams();
  gLogged = nullptr;

  std::vector<Logged> aliasLines;
  for (const Logged& line : logged) {
    if (line.text.find("original Bagua-Net") != std::string::npos) aliasLines.push_back(line);
  }
  ASSERT_EQ(aliasLines.size(), 2u);
  EXPECT_EQ(aliasLines[0].level, NCCL_LOG_INFO);
  EXPECT_EQ(aliasLines[0].flags, static_cast<unsigned long>(NCCL_INIT | NCCL_NET));
  EXPECT_EQ(aliasLines[0].text,
            "NET/Bagua BAGUA_NET_NSTREAMS=6 (original Bagua-Net) taken as BAGUA_NET_STREAMS=6: "
            "TCP streams per connection");
  EXPECT_EQ(aliasLines[1].level, NCCL_LOG_WARN);
  EXPECT_NE(aliasLines[1].text.find("ignored: BAGUA_NET_IMPLEMENT, BAGUA_NET_PROMETHEUS_ADDRESS"),
            std::string::npos)
      << aliasLines[1].text;
}

}  // namespace
}  // namespace bagua::net
