// The tuner: its decisions as a table (policy in, channels out), and the
// shipped library as NCCL drives it (net plugin init sets the channel floor,
// then the tuner table answers getCollInfo), including the user's overrides.
// Library cases run in a child process each: the floor and the policy are
// set once per process, as NCCL reads NCCL_MIN_NCHANNELS once.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "net_plugin/nccl/net_v8.h"
#include "net_plugin/nccl/tuner.h"
#include "net_plugin/tuner/algorithm_policy.h"
#include "net_plugin/tuner/channel_policy.h"

namespace bagua::net::tuner {
namespace {

constexpr size_t kMiB = 1u << 20;
const CommShape kTwoNodes{2, 2};
const CommShape kOneNode{8, 1};

TEST(ChannelPolicy, FloorOnlyWhenOnAndTheUserChoseNone) {
  Policy on;
  EXPECT_EQ(channelFloor(on), kAutoChannels);
  EXPECT_EQ(kAutoChannels, 8);
  Policy off = on;
  off.enabled = false;
  EXPECT_EQ(channelFloor(off), 0);
  Policy user = on;
  user.userChannels = true;
  EXPECT_EQ(channelFloor(user), 0);
  Policy eight = on;
  eight.channels = 8;
  EXPECT_EQ(channelFloor(eight), 8);
}

TEST(ChannelPolicy, ChannelsFollowTheSize) {
  Policy p;  // 1 MiB per channel, 2..8
  struct Case {
    size_t bytes;
    int channels;
  } cases[] = {
      {8, 0},                 // small: NCCL's own
      {kSmallBytes - 1, 0},   // still small
      {kSmallBytes, 2},       // the least the tuner gives
      {2 * kMiB, 2},          //
      {3 * kMiB, 3},          //
      {5 * kMiB + 1, 6},      // rounded up
      {8 * kMiB, 8},          //
      {16 * kMiB, 8},         // at most the floor
      {1024 * kMiB, 8},       //
  };
  for (const Case& c : cases) {
    EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, c.bytes), c.channels) << c.bytes;
  }
  p.bytesPerChannel = 256 * 1024;
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllGather, kMiB), 4);
}

TEST(ChannelPolicy, LeavesAloneWhatItMustNotTune) {
  Policy p;
  EXPECT_EQ(channelsFor(p, kOneNode, ncclFuncAllReduce, 64 * kMiB), 0) << "one node";
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncSendRecv, 64 * kMiB), 0) << "point to point";
  EXPECT_EQ(channelsFor(p, kTwoNodes, static_cast<ncclFunc_t>(8), 64 * kMiB), 0) << "AlltoAll";
  Policy user = p;
  user.userChannels = true;
  EXPECT_EQ(channelsFor(user, kTwoNodes, ncclFuncAllReduce, 64 * kMiB), 0) << "user's channels";
  Policy off = p;
  off.enabled = false;
  EXPECT_EQ(channelsFor(off, kTwoNodes, ncclFuncAllReduce, 64 * kMiB), 0) << "off";
  EXPECT_NE(describe(off, kTwoNodes).find("BAGUA_NET_TUNER=0"), std::string::npos);
  EXPECT_NE(describe(p, kOneNode).find("one node"), std::string::npos);
}

TEST(ChannelPolicy, AKnownLinkSpeedCapsTheChannels) {
  Policy p;  // floor 8, 1 MiB per channel
  p.linkMbps = 10000;  // one channel per 1250 Mbit/s: 8
  EXPECT_EQ(mostChannels(p), 8);
  EXPECT_EQ(channelFloor(p), 8);
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 3 * kMiB), 3);
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 64 * kMiB), 8);
  p.linkMbps = 5000;  // 4: under the floor of 8, and the log says why
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 64 * kMiB), 4);
  EXPECT_NE(describe(p, kTwoNodes).find("capped by the link"), std::string::npos);
  p.linkMbps = 2500;  // NCCL's own 2 fill it: no floor, collectives left alone
  EXPECT_EQ(mostChannels(p), 2);
  EXPECT_EQ(channelFloor(p), 0);
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 64 * kMiB), 0);
  EXPECT_NE(describe(p, kTwoNodes).find("2500 Mbit/s"), std::string::npos);
  p.linkMbps = 1000;  // slower still: at least 2
  EXPECT_EQ(mostChannels(p), 2);
  p.linkMbps = 6250;
  EXPECT_EQ(channelFloor(p), 5);
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 64 * kMiB), 5);
  p.linkMbps = 25000;  // a cap of 20: the floor of 8 is the limit
  EXPECT_EQ(channelFloor(p), 8);
  p.channels = 16;  // and a floor knob of 16 under it is kept
  EXPECT_EQ(channelFloor(p), 16);
  p.channels = 0;
  p.linkMbps = 400000;  // fast: the floor is the limit
  EXPECT_EQ(channelFloor(p), 8);
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 64 * kMiB), 8);
  p.linkMbps = 0;  // unknown (lo): not capped
  EXPECT_EQ(channelFloor(p), 8);
  p.channels = 1;  // a floor knob of 1 on an unknown link is still the user's floor
  EXPECT_EQ(channelFloor(p), 1);
  EXPECT_EQ(describe(p, kTwoNodes).find("Mbit/s"), std::string::npos);
  p.linkMbps = 10000;  // and under the link's cap it stays
  EXPECT_EQ(channelFloor(p), 1);
}

TEST(ChannelPolicy, ARankWithFewCpusGetsOneChannelPerCpu) {
  Policy p;  // automatic floor
  p.rankCpus = 8;  // 2 ranks on 16 CPUs: 8
  EXPECT_EQ(channelFloor(p), 8);
  p.rankCpus = 64;  // 1 rank on 64 CPUs: still at most 8
  EXPECT_EQ(channelFloor(p), 8);
  p.rankCpus = 6;
  EXPECT_EQ(channelFloor(p), 6);
  p.rankCpus = 4;  // 4 ranks on 16 CPUs
  EXPECT_EQ(channelFloor(p), 4);
  EXPECT_EQ(mostChannels(p), 4);
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 64 * kMiB), 4);
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 3 * kMiB), 3);
  EXPECT_NE(describe(p, kTwoNodes).find("one per CPU"), std::string::npos);
  p.linkMbps = 40000;  // the link's cap of 32 is above it
  EXPECT_EQ(channelFloor(p), 4);
  p.linkMbps = 0;
  for (int cpus : {2, 1}) {  // 8 ranks on 16 CPUs, or a 1-CPU share: NCCL's own 2
    p.rankCpus = cpus;
    EXPECT_EQ(channelFloor(p), 0) << cpus;
    EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 64 * kMiB), 0) << cpus;
    EXPECT_NE(describe(p, kTwoNodes).find("NCCL's own 2"), std::string::npos) << cpus;
  }
  p.channels = 16;  // a floor the user set is kept whatever the CPUs
  EXPECT_EQ(channelFloor(p), 16);
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 64 * kMiB), 16);
}

TEST(ChannelPolicy, AnotherNetworkTunerOrAnNcclWithoutOurTunerGetsNoFloor) {
  Policy p;
  EXPECT_EQ(channelFloor(p), 8);
  Policy net = p;
  net.otherNetwork = true;  // NCCL_NET=IB
  EXPECT_EQ(channelFloor(net), 0);
  EXPECT_EQ(channelsFor(net, kTwoNodes, ncclFuncAllReduce, 64 * kMiB), 0);
  EXPECT_NE(describe(net, kTwoNodes).find("not this communicator's network"), std::string::npos);
  Policy tuner = p;
  tuner.otherTuner = true;  // NCCL_TUNER_PLUGIN=none
  EXPECT_EQ(channelFloor(tuner), 0);
  EXPECT_NE(describe(tuner, kTwoNodes).find("NCCL_TUNER_PLUGIN"), std::string::npos);
  Policy old = p;
  old.ncclVersion = 22005;  // 2.20.5 (torch 2.3, 2.4): loads no tuner from here
  EXPECT_EQ(channelFloor(old), 0);
  EXPECT_NE(describe(old, kTwoNodes).find("NCCL 2.20.5"), std::string::npos);
  old.ncclVersion = 22105;  // 2.21.5 does
  EXPECT_EQ(channelFloor(old), 8);
}

TEST(ChannelPolicy, ACommunicatorBaguaNetDoesNotCarryIsLeftAlone) {
  Policy p;
  CommShape elsewhere = kTwoNodes;
  elsewhere.viaBagua = false;  // NCCL 2.30+ with NCCL_NET=IB: our init never ran
  EXPECT_EQ(channelsFor(p, elsewhere, ncclFuncAllReduce, 64 * kMiB), 0);
  EXPECT_NE(describe(p, elsewhere).find("not this communicator's network"), std::string::npos);
}

// NCCL's cost table: float[7][3] (algorithms x protocols), -1 for what it ruled out.
struct CostTable {
  float t[7][3];
  CostTable() {
    for (auto& row : t) {
      for (float& v : row) v = -1.0f;
    }
  }
  const float* data() const { return &t[0][0]; }
  float* data() { return &t[0][0]; }
};

// NCCL 2.28's table for a tiny all_reduce on 2 ranks on 2 nodes: Ring LL
// just ahead of Tree LL.
CostTable tinyTwoNodeTable() {
  CostTable c;
  c.t[NCCL_ALGO_TREE][0] = 16.8f;
  c.t[NCCL_ALGO_TREE][2] = 36.4f;
  c.t[NCCL_ALGO_RING][0] = 16.6f;
  c.t[NCCL_ALGO_RING][2] = 36.4f;
  return c;
}

TEST(AlgorithmPolicy, ATinyAllReduceOnTwoRanksGoesToTreeLL) {
  Policy p;
  for (size_t bytes : {size_t{4}, size_t{8}, kTreeMostBytes}) {
    CostTable c = tinyTwoNodeTable();
    EXPECT_TRUE(preferTreeLL(p, kTwoNodes, ncclFuncAllReduce, bytes, c.data(), 7, 3)) << bytes;
    EXPECT_EQ(c.t[NCCL_ALGO_TREE][0], 0.0f);
    EXPECT_EQ(c.t[NCCL_ALGO_RING][0], 16.6f) << "only Tree LL changes";
  }
}

TEST(AlgorithmPolicy, EverythingElseKeepsNcclsChoice) {
  Policy p;
  struct Case {
    const char* what;
    Policy policy;
    CommShape comm;
    ncclFunc_t func;
    size_t bytes;
  };
  Policy off = p, userAlgo = p, other = p;
  off.enabled = false;
  userAlgo.userAlgorithm = true;
  other.otherTuner = true;
  const Case cases[] = {
      {"32 B: Ring measured ahead", p, kTwoNodes, ncclFuncAllReduce, kTreeMostBytes + 1},
      {"4 ranks", p, CommShape{4, 4}, ncclFuncAllReduce, 8},
      {"2 ranks on 1 node", p, CommShape{2, 1}, ncclFuncAllReduce, 8},
      {"not Bagua-Net's", p, CommShape{2, 2, false}, ncclFuncAllReduce, 8},
      {"all_gather", p, kTwoNodes, ncclFuncAllGather, 8},
      {"BAGUA_NET_TUNER=0", off, kTwoNodes, ncclFuncAllReduce, 8},
      {"NCCL_ALGO or NCCL_PROTO set", userAlgo, kTwoNodes, ncclFuncAllReduce, 8},
      {"another tuner", other, kTwoNodes, ncclFuncAllReduce, 8},
  };
  for (const Case& c : cases) {
    CostTable t = tinyTwoNodeTable();
    EXPECT_FALSE(preferTreeLL(c.policy, c.comm, c.func, c.bytes, t.data(), 7, 3)) << c.what;
    EXPECT_EQ(t.t[NCCL_ALGO_TREE][0], 16.8f) << c.what;
  }
  CostTable noTree = tinyTwoNodeTable();
  noTree.t[NCCL_ALGO_TREE][0] = -1.0f;  // ruled out (NCCL_ALGO=Ring, say)
  EXPECT_FALSE(preferTreeLL(p, kTwoNodes, ncclFuncAllReduce, 8, noTree.data(), 7, 3));
  EXPECT_EQ(noTree.t[NCCL_ALGO_TREE][0], -1.0f);
  CostTable simple = tinyTwoNodeTable();
  simple.t[NCCL_ALGO_RING][2] = 10.0f;  // NCCL's pick is Ring Simple, not Ring LL
  EXPECT_FALSE(preferTreeLL(p, kTwoNodes, ncclFuncAllReduce, 8, simple.data(), 7, 3));
  EXPECT_FALSE(preferTreeLL(p, kTwoNodes, ncclFuncAllReduce, 8, nullptr, 7, 3)) << "v2: no table";
  EXPECT_FALSE(picksAlgorithm(userAlgo, kTwoNodes));
  EXPECT_TRUE(picksAlgorithm(p, kTwoNodes));
}

TEST(ChannelPolicy, TheWinningAlgorithmIsReadFromNcclsCostTable) {
  EXPECT_EQ(winningAlgorithm(nullptr, 7, 3), Algorithm::kUnknown);
  CostTable none;
  EXPECT_EQ(winningAlgorithm(none.data(), 7, 3), Algorithm::kUnknown) << "all ruled out";
  CostTable ring;
  ring.t[NCCL_ALGO_RING][2] = 10;  // Simple
  ring.t[NCCL_ALGO_TREE][2] = 12;
  EXPECT_EQ(winningAlgorithm(ring.data(), 7, 3), Algorithm::kTreeOrRing);
  CostTable nvls = ring;
  nvls.t[5][2] = 4;  // NVLS_TREE cheapest
  EXPECT_EQ(winningAlgorithm(nvls.data(), 7, 3), Algorithm::kOther);
  CostTable pat;
  pat.t[6][2] = 3;  // PAT
  pat.t[NCCL_ALGO_RING][0] = 5;
  EXPECT_EQ(winningAlgorithm(pat.data(), 7, 3), Algorithm::kOther);
  // Rows are numProto apart: read with 2 protocols, [1][1] is the 4th float.
  CostTable stride;
  stride.t[1][0] = 1;  // the 4th float: algorithm 1 (Ring) of a 2-protocol table
  EXPECT_EQ(winningAlgorithm(stride.data(), 7, 3), Algorithm::kTreeOrRing);
  EXPECT_EQ(winningAlgorithm(stride.data(), 7, 2), Algorithm::kTreeOrRing);
  stride.t[1][0] = -1;
  stride.t[2][0] = 1;  // the 7th float: algorithm 2 (CollNet) with 3, algorithm 3 with 2
  EXPECT_EQ(winningAlgorithm(stride.data(), 7, 3), Algorithm::kOther);
  Policy p;
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 64 * kMiB, Algorithm::kOther), 0);
  EXPECT_EQ(channelsFor(p, kTwoNodes, ncclFuncAllReduce, 64 * kMiB, Algorithm::kTreeOrRing), 8);
}

// What a library case runs beyond the defaults.
struct CaseOptions {
  bool netInit = true;             // false: NCCL 2.30+ with NCCL_NET naming another network
  const float* costTable = nullptr;  // handed to v3+ getCollInfo for the 64 MiB call
  int nvlsSupport = 0;             // v2's flag
  bool ncclLogger = false;         // init gets fake-nccl's logger (its version answers)
};

// In a child: loads the library, runs the net plugin's init as NCCL does,
// then the tuner table of `version`; exits 0 when NCCL_MIN_NCHANNELS is
// `floorAfter` ("" = unset) and a 64 MiB all_reduce on two nodes gets
// `bigChannels` (0: left to NCCL), else prints why and exits 1.
[[noreturn]] void runLibraryCase(int version, const char* floorAfter, int bigChannels,
                                const CaseOptions& options = {}) {
  auto fail = [](const std::string& why) {
    std::fprintf(stderr, "%s\n", why.c_str());
    std::_Exit(1);
  };
  void* lib = dlopen(BAGUA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) fail(dlerror());
  ncclDebugLogger_t logger = nullptr;
  if (options.ncclLogger) {
    void* nccl = dlopen(BAGUA_FAKE_NCCL_PATH, RTLD_NOW | RTLD_LOCAL);
    if (nccl == nullptr) fail(dlerror());
    logger = reinterpret_cast<ncclDebugLogger_t>(dlsym(nccl, "fakeNcclLogger"));
    if (logger == nullptr) fail("fake-nccl has no fakeNcclLogger");
  }
  auto* net = static_cast<const ncclNet_v8_t*>(dlsym(lib, "ncclNetPlugin_v8"));
  if (net == nullptr) fail("ncclNetPlugin_v8 is not exported");
  if (options.netInit && net->init(logger) != ncclSuccess) fail("net plugin init failed");
  const char* floor = std::getenv("NCCL_MIN_NCHANNELS");
  if (std::string(floor ? floor : "") != floorAfter) {
    fail(std::string("NCCL_MIN_NCHANNELS is '") + (floor ? floor : "") + "', expected '" +
         floorAfter + "'");
  }
  void* ctx = nullptr;
  int channels = 0, small = 0;
  auto** table64 = reinterpret_cast<float**>(const_cast<float*>(options.costTable));
  std::string symbol = "ncclTunerPlugin_v" + std::to_string(version);
  void* table = dlsym(lib, symbol.c_str());
  if (table == nullptr) fail(symbol + " is not exported");
  if (version == 2) {
    auto* t = static_cast<const ncclTuner_v2_t*>(table);
    int algo = -1, proto = -1;
    if (t->init(2, 2, nullptr, &ctx) != ncclSuccess) fail("v2 init failed");
    t->getCollInfo(ctx, ncclFuncAllReduce, 64 * kMiB, 0, options.nvlsSupport, 1, &algo, &proto,
                   &channels);
    t->getCollInfo(ctx, ncclFuncAllReduce, 8, 0, 0, 1, &algo, &proto, &small);
    if (algo != -1 || proto != -1) fail("v2 changed NCCL's algorithm or protocol");
    t->destroy(ctx);
  } else if (version == 3) {
    auto* t = static_cast<const ncclTuner_v3_t*>(table);
    if (t->init(2, 2, nullptr, &ctx) != ncclSuccess) fail("v3 init failed");
    t->getCollInfo(ctx, ncclFuncAllReduce, 64 * kMiB, 1, table64, 7, 3, &channels);
    t->getCollInfo(ctx, ncclFuncAllReduce, 8, 1, nullptr, 7, 3, &small);
    t->destroy(ctx);
  } else if (version == 4) {
    auto* t = static_cast<const ncclTuner_v4_t*>(table);
    if (t->init(2, 2, nullptr, &ctx) != ncclSuccess) fail("v4 init failed");
    t->getCollInfo(ctx, ncclFuncAllReduce, 64 * kMiB, 1, table64, 7, 3, 0, &channels);
    t->getCollInfo(ctx, ncclFuncAllReduce, 8, 1, nullptr, 7, 3, 0, &small);
    t->destroy(ctx);
  } else {
    auto* t = static_cast<const ncclTuner_v6_t*>(table);  // v5 is v6's prefix
    if (t->init(&ctx, 7, 2, 2, nullptr, nullptr, nullptr) != ncclSuccess) fail("init failed");
    t->getCollInfo(ctx, ncclFuncAllReduce, 64 * kMiB, 1, table64, 7, 3, 0, &channels);
    t->getCollInfo(ctx, ncclFuncAllReduce, 8, 1, nullptr, 7, 3, 0, &small);
    if (version == 6 && t->getChunkSize != nullptr) fail("v6 getChunkSize should be NULL");
    t->finalize(ctx);
  }
  if (channels != bigChannels) {
    fail("64 MiB all_reduce got " + std::to_string(channels) + " channels, expected " +
         std::to_string(bigChannels));
  }
  if (small != 0) fail("an 8 B all_reduce got " + std::to_string(small) + " channels");
  std::_Exit(0);
}

// In a child: the library as NCCL drives it (net init, v5 tuner on 2 ranks on
// 2 nodes), one 8 B all_reduce with NCCL 2.28's cost table; exits 0 when Tree
// LL's entry is (wantTree) or is not the cheapest afterwards.
[[noreturn]] void runAlgorithmCase(bool wantTree) {
  void* lib = dlopen(BAGUA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  auto* net = lib ? static_cast<const ncclNet_v8_t*>(dlsym(lib, "ncclNetPlugin_v8")) : nullptr;
  auto* t = lib ? static_cast<const ncclTuner_v5_t*>(dlsym(lib, "ncclTunerPlugin_v5")) : nullptr;
  if (net == nullptr || t == nullptr || net->init(nullptr) != ncclSuccess) std::_Exit(2);
  void* ctx = nullptr;
  if (t->init(&ctx, 7, 2, 2, nullptr, nullptr, nullptr) != ncclSuccess) std::_Exit(3);
  CostTable c = tinyTwoNodeTable();
  int channels = 0;
  t->getCollInfo(ctx, ncclFuncAllReduce, 8, 1, reinterpret_cast<float**>(c.data()), 7, 3, 0,
                 &channels);
  t->finalize(ctx);
  bool tree = c.t[NCCL_ALGO_TREE][0] < c.t[NCCL_ALGO_RING][0];
  if (tree != wantTree) {
    std::fprintf(stderr, "Tree LL %g, Ring LL %g\n", c.t[NCCL_ALGO_TREE][0],
                 c.t[NCCL_ALGO_RING][0]);
    std::_Exit(1);
  }
  std::_Exit(channels == 0 ? 0 : 4);
}

class TunerLibrary : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    for (const char* name : {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS",
                             "NCCL_MAX_CTAS", "NCCL_MIN_NRINGS", "NCCL_MAX_NRINGS", "NCCL_NET",
                             "NCCL_TUNER_PLUGIN", "BAGUA_TEST_NCCL_VERSION", "NCCL_ALGO",
                             "NCCL_PROTO"}) {
      unsetenv(name);
    }
    unsetenv("BAGUA_NET_TUNER");
    unsetenv("BAGUA_NET_SPEED_MBPS");
    unsetenv("BAGUA_NET_LOCAL_RANKS");
    // lo reports no speed, so the machine's NICs cannot cap the channels;
    // the floor of 16 is named, since the automatic one follows the CPUs.
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    setenv("BAGUA_NET_TUNER_CHANNELS", "16", 1);
  }
  void TearDown() override {
    unsetenv("NCCL_SOCKET_IFNAME");
    unsetenv("BAGUA_NET_TUNER_CHANNELS");
  }
};

TEST_F(TunerLibrary, SetsTheFloorAndTunesBigCollectives) {
  for (int version : {2, 3, 4, 5, 6}) {
    EXPECT_EXIT(runLibraryCase(version, "16", 16), ::testing::ExitedWithCode(0), "")
        << "v" << version;
  }
}

TEST_F(TunerLibrary, ATinyAllReduceOnTwoRanksGoesToTreeLLUnlessTheUserChose) {
  EXPECT_EXIT(runAlgorithmCase(true), ::testing::ExitedWithCode(0), "");
  setenv("NCCL_ALGO", "Ring,Tree", 1);
  EXPECT_EXIT(runAlgorithmCase(false), ::testing::ExitedWithCode(0), "");
  unsetenv("NCCL_ALGO");
  setenv("NCCL_PROTO", "LL", 1);
  EXPECT_EXIT(runAlgorithmCase(false), ::testing::ExitedWithCode(0), "");
  unsetenv("NCCL_PROTO");
  setenv("BAGUA_NET_TUNER", "0", 1);
  EXPECT_EXIT(runAlgorithmCase(false), ::testing::ExitedWithCode(0), "");
}

TEST_F(TunerLibrary, UsersMinChannelsWins) {
  setenv("NCCL_MIN_NCHANNELS", "4", 1);
  EXPECT_EXIT(runLibraryCase(5, "4", 0), ::testing::ExitedWithCode(0), "");
}

TEST_F(TunerLibrary, UsersMaxChannelsLeavesTheFloorUnset) {
  setenv("NCCL_MAX_NCHANNELS", "2", 1);
  EXPECT_EXIT(runLibraryCase(5, "", 0), ::testing::ExitedWithCode(0), "");
}

TEST_F(TunerLibrary, ChannelCapsOfEveryNameLeaveTheFloorUnset) {
  // NCCL applies its minimum after its maximum: a floor would undo the cap.
  for (const char* name : {"NCCL_MAX_CTAS", "NCCL_MIN_CTAS", "NCCL_MAX_NRINGS", "NCCL_MIN_NRINGS"}) {
    setenv(name, "4", 1);
    EXPECT_EXIT(runLibraryCase(5, "", 0), ::testing::ExitedWithCode(0), "") << name;
    unsetenv(name);
  }
}

TEST_F(TunerLibrary, AnEmptyMinChannelsIsReplacedByTheFloor) {
  setenv("NCCL_MIN_NCHANNELS", "", 1);  // NCCL ignores it as unset
  EXPECT_EXIT(runLibraryCase(5, "16", 16), ::testing::ExitedWithCode(0), "");
}

TEST_F(TunerLibrary, AnotherNetworkOrTunerLeavesNcclAlone) {
  setenv("NCCL_NET", "IB", 1);
  EXPECT_EXIT(runLibraryCase(5, "", 0), ::testing::ExitedWithCode(0), "");
  setenv("NCCL_NET", "bagua", 1);  // ours, in any case
  EXPECT_EXIT(runLibraryCase(5, "16", 16), ::testing::ExitedWithCode(0), "");
  unsetenv("NCCL_NET");
  setenv("NCCL_TUNER_PLUGIN", "none", 1);
  EXPECT_EXIT(runLibraryCase(5, "", 0), ::testing::ExitedWithCode(0), "");
  setenv("NCCL_TUNER_PLUGIN", BAGUA_PLUGIN_PATH, 1);  // ours, named
  EXPECT_EXIT(runLibraryCase(5, "16", 16), ::testing::ExitedWithCode(0), "");
}

TEST_F(TunerLibrary, WithoutTheNetPluginsInitTheTunerLeavesNcclAlone) {
  // NCCL 2.30+ loads the library for its tuner even when NCCL_NET picks
  // another network, and then runs no init of ours.
  CaseOptions noInit;
  noInit.netInit = false;
  EXPECT_EXIT(runLibraryCase(6, "", 0, noInit), ::testing::ExitedWithCode(0), "");
}

TEST_F(TunerLibrary, AnNcclThatLoadsNoTunerFromHereGetsNoFloor) {
  CaseOptions nccl;
  nccl.ncclLogger = true;
  setenv("BAGUA_TEST_NCCL_VERSION", "22005", 1);  // 2.20.5
  EXPECT_EXIT(runLibraryCase(2, "", 0, nccl), ::testing::ExitedWithCode(0), "");
  setenv("BAGUA_TEST_NCCL_VERSION", "22809", 1);  // 2.28.9
  EXPECT_EXIT(runLibraryCase(5, "16", 16, nccl), ::testing::ExitedWithCode(0), "");
}

TEST_F(TunerLibrary, AlgorithmsOtherThanRingAndTreeKeepNcclsChannels) {
  CostTable ring;
  ring.t[NCCL_ALGO_RING][2] = 10;
  CostTable nvlsTree = ring;
  nvlsTree.t[5][2] = 4;
  CaseOptions viaRing, viaNvls;
  viaRing.costTable = ring.data();
  viaNvls.costTable = nvlsTree.data();
  for (int version : {3, 4, 5, 6}) {
    EXPECT_EXIT(runLibraryCase(version, "16", 16, viaRing), ::testing::ExitedWithCode(0), "")
        << "v" << version;
    EXPECT_EXIT(runLibraryCase(version, "16", 0, viaNvls), ::testing::ExitedWithCode(0), "")
        << "v" << version;
  }
  CaseOptions v2Nvls;
  v2Nvls.nvlsSupport = 1;
  EXPECT_EXIT(runLibraryCase(2, "16", 0, v2Nvls), ::testing::ExitedWithCode(0), "");
}

TEST_F(TunerLibrary, OffLeavesNcclAlone) {
  setenv("BAGUA_NET_TUNER", "0", 1);
  EXPECT_EXIT(runLibraryCase(4, "", 0), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(runLibraryCase(3, "", 0), ::testing::ExitedWithCode(0), "");
}

TEST_F(TunerLibrary, AKnownLinkSpeedCapsTheChannels) {
  setenv("BAGUA_NET_SPEED_MBPS", "10000", 1);
  EXPECT_EXIT(runLibraryCase(5, "8", 8), ::testing::ExitedWithCode(0), "");
  setenv("BAGUA_NET_SPEED_MBPS", "2500", 1);  // NCCL's own 2 fill it
  EXPECT_EXIT(runLibraryCase(6, "", 0), ::testing::ExitedWithCode(0), "");
  unsetenv("BAGUA_NET_SPEED_MBPS");
}

TEST_F(TunerLibrary, ChannelKnobsApply) {
  setenv("BAGUA_NET_TUNER_CHANNELS", "8", 1);
  EXPECT_EXIT(runLibraryCase(6, "8", 8), ::testing::ExitedWithCode(0), "");
}

// NCCL, with NCCL_TUNER_PLUGIN unset, takes a libnccl-tuner.so from the
// library path before it looks in the net plugin's library: under that tuner
// our floor would never be lowered, so there is none. The dynamic loader reads
// LD_LIBRARY_PATH once, at start, so each case runs in this binary started
// again with a folder holding libnccl-tuner.so first on it.
constexpr const char* kOtherTunerCase = "BAGUA_TEST_TUNER_ON_PATH";

// In the started-again binary: the case its parent asked for (exits).
void runTunerOnPathCase() {
  const char* which = std::getenv(kOtherTunerCase);
  if (std::string(which) == "other") runLibraryCase(5, "", 0);
  runLibraryCase(5, "16", 16);  // "ours": a link to this very library
}

// Starts this binary again with `dir` first on LD_LIBRARY_PATH, running only
// the current test, which then runs case `which`.
[[noreturn]] void reexecWithLibraryPath(const std::string& dir, const char* which) {
  const char* old = std::getenv("LD_LIBRARY_PATH");
  std::string path = dir + (old != nullptr && old[0] != '\0' ? ":" + std::string(old) : "");
  setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  setenv(kOtherTunerCase, which, 1);
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string filter =
      std::string("--gtest_filter=") + test->test_suite_name() + "." + test->name();
  execl("/proc/self/exe", "/proc/self/exe", filter.c_str(), static_cast<char*>(nullptr));
  std::fprintf(stderr, "execl /proc/self/exe failed\n");
  std::_Exit(3);
}

// A fresh folder holding libnccl-tuner.so as a link to `target`, removed
// with its link when it goes out of scope; path() is empty if it could not
// be made.
class TunerLinkFolder {
 public:
  explicit TunerLinkFolder(const char* target) {
    char dir[] = "/tmp/bagua-tuner-path-XXXXXX";  // mkdtemp's template
    if (mkdtemp(dir) == nullptr) return;
    dir_ = dir;
    if (symlink(target, link().c_str()) != 0) dir_.clear();
  }
  ~TunerLinkFolder() {
    if (dir_.empty()) return;
    unlink(link().c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return dir_; }

 private:
  std::string link() const { return dir_ + "/libnccl-tuner.so"; }
  std::string dir_;
};

TEST_F(TunerLibrary, ALibncclTunerOnTheLibraryPathGetsNoFloor) {
  if (std::getenv(kOtherTunerCase) != nullptr) runTunerOnPathCase();
  // Forked, not re-executed: the child execs at once, and a re-executed one
  // would make (and never remove) folders of its own.
  GTEST_FLAG_SET(death_test_style, "fast");
  // Any library NCCL can load there is not ours (one without a tuner table
  // leaves NCCL with no tuner at all): fake-nccl stands in for it.
  {
    TunerLinkFolder other(BAGUA_FAKE_NCCL_PATH);
    ASSERT_FALSE(other.path().empty());
    EXPECT_EXIT(reexecWithLibraryPath(other.path(), "other"), ::testing::ExitedWithCode(0), "");
  }
  // libnccl-tuner.so as a link to this library is ours: the floor stays.
  TunerLinkFolder ours(BAGUA_PLUGIN_PATH);
  ASSERT_FALSE(ours.path().empty());
  EXPECT_EXIT(reexecWithLibraryPath(ours.path(), "ours"), ::testing::ExitedWithCode(0), "");
}

TEST_F(TunerLibrary, ARankWithFewCpusLeavesNcclItsOwnChannels) {
  // 64 ranks on this host: each one's share is below 2 CPUs on any test machine.
  unsetenv("BAGUA_NET_TUNER_CHANNELS");
  setenv("BAGUA_NET_LOCAL_RANKS", "64", 1);
  EXPECT_EXIT(runLibraryCase(5, "", 0), ::testing::ExitedWithCode(0), "");
  unsetenv("BAGUA_NET_LOCAL_RANKS");
}

}  // namespace
}  // namespace bagua::net::tuner
