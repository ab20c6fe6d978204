// Knob parsing: sizes, CPU lists, and the environment through loadParams().
#include <gtest/gtest.h>

#include <string>

#include "net_plugin/base/params.h"
#include "net_plugin/base/status.h"
#include "tests/net_plugin/support/scoped_env.h"

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

// The message loadParams() throws for `name`=`value`, or "" when it loads.
std::string loadError(const char* name, const char* value) {
  ScopedEnv env(name, value);
  try {
    loadParams();
  } catch (const NetError& e) {
    EXPECT_EQ(e.code(), Status::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(LoadParams, EngineNames) {
  for (auto [text, kind] : {std::pair{"auto", EngineKind::kAuto},
                            {"io_uring", EngineKind::kIoUring},
                            {"epoll", EngineKind::kEpoll},
                            {"inline", EngineKind::kInline}}) {
    ScopedEnv engine("BAGUA_NET_ENGINE", text);
    EXPECT_EQ(loadParams().engine, kind) << text;
  }
}

TEST(LoadParams, LocalRanksFromTheKnobOrTheLauncher) {
  {
    ScopedEnv torchrun("LOCAL_WORLD_SIZE", "8");
    EXPECT_EQ(loadParams().localRanks, 8);
    ScopedEnv knob("BAGUA_NET_LOCAL_RANKS", "3");
    EXPECT_EQ(loadParams().localRanks, 3) << "the knob wins over the launcher";
  }
  ScopedEnv none("LOCAL_WORLD_SIZE", nullptr);
  ScopedEnv ompi("OMPI_COMM_WORLD_LOCAL_SIZE", nullptr);
  ScopedEnv mpich("MPI_LOCALNRANKS", nullptr);
  ScopedEnv slurm("SLURM_NTASKS_PER_NODE", nullptr);
  EXPECT_EQ(loadParams().localRanks, 1);
}

TEST(LoadParams, ReadsEveryKindOfKnob) {
  ScopedEnv streams("BAGUA_NET_STREAMS", "7");
  ScopedEnv chunk("BAGUA_NET_CHUNK_BYTES", "1M");
  ScopedEnv engine("BAGUA_NET_ENGINE", "uring");
  ScopedEnv zeroCopy("BAGUA_NET_ZEROCOPY", "1");
  ScopedEnv cpus("BAGUA_NET_CPUS", "2-3");
  ScopedEnv family("NCCL_SOCKET_FAMILY", "AF_INET6");
  Params p = loadParams();
  EXPECT_EQ(p.streams, 7);
  EXPECT_EQ(p.chunkBytes, 1u << 20);
  EXPECT_EQ(p.engine, EngineKind::kIoUring);
  EXPECT_EQ(p.zeroCopy, ZeroCopyMode::kAuto);
  EXPECT_EQ(p.cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(p.socketFamily, "AF_INET6");
  EXPECT_EQ(p.threads, Params{}.threads) << "unset knobs keep their defaults";
  EXPECT_EQ(p.minSplitBytes, kAutoBytes) << "unset: auto, resolved by the process's state";
  ScopedEnv split("BAGUA_NET_MIN_SPLIT_BYTES", "128K");
  EXPECT_EQ(loadParams().minSplitBytes, 128u << 10);
  ScopedEnv splitAuto("BAGUA_NET_MIN_SPLIT_BYTES", "auto");
  EXPECT_EQ(loadParams().minSplitBytes, kAutoBytes);
}

TEST(LoadParams, NamesTheKnobAndTheExpectedForm) {
  EXPECT_EQ(loadError("BAGUA_NET_STREAMS", "0"),
            "environment knob BAGUA_NET_STREAMS=\"0\" is invalid: expected an integer in [1, 64]");
  EXPECT_EQ(loadError("BAGUA_NET_CHUNK_BYTES", "1K"),
            "environment knob BAGUA_NET_CHUNK_BYTES=\"1K\" is invalid: expected a size (e.g. "
            "256K, 4M) in [4096, 67108864] bytes");
  EXPECT_EQ(loadError("BAGUA_NET_MIN_SPLIT_BYTES", "big"),
            "environment knob BAGUA_NET_MIN_SPLIT_BYTES=\"big\" is invalid: expected auto or a "
            "size (e.g. 256K, 4M) in [0, 67108864] bytes");
  EXPECT_EQ(loadError("BAGUA_NET_MIN_SPLIT_BYTES", "auto"), "");
  EXPECT_EQ(loadError("BAGUA_NET_MIN_SPLIT_BYTES", "1M"), "");
  EXPECT_EQ(loadError("BAGUA_NET_ENGINE", "poll"),
            "environment knob BAGUA_NET_ENGINE=\"poll\" is invalid: expected auto, io_uring, "
            "epoll or inline");
  EXPECT_EQ(loadError("BAGUA_NET_LOCAL_RANKS", "-1"),
            "environment knob BAGUA_NET_LOCAL_RANKS=\"-1\" is invalid: expected an integer in [0, "
            "4096]");
  EXPECT_EQ(loadError("BAGUA_NET_ZEROCOPY", "yes"),
            "environment knob BAGUA_NET_ZEROCOPY=\"yes\" is invalid: expected off, auto or always");
  EXPECT_EQ(loadError("BAGUA_NET_CPUS", "x"),
            "environment knob BAGUA_NET_CPUS=\"x\" is invalid: expected a CPU list such as 0-3,8");
  EXPECT_EQ(loadError("NCCL_SOCKET_FAMILY", "AF_UNIX"),
            "environment knob NCCL_SOCKET_FAMILY=\"AF_UNIX\" is invalid: expected AF_INET or "
            "AF_INET6");
  EXPECT_EQ(loadError("NCCL_SOCKET_IFNAME", "anything"), "");
}

}  // namespace
}  // namespace bagua::net
