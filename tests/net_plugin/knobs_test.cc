// Knobs that act on threads and sockets rather than on the data path:
// BAGUA_NET_CPUS pins the engine's workers, BAGUA_NET_BUSY_POLL_US sets
// SO_BUSY_POLL on data sockets, BAGUA_NET_FLOWS_PER_PEER turns NCCL's
// setNetAttr hints into stream counts, BAGUA_NET_RTO_MIN_US sets
// TCP_RTO_MIN_US. tests/meson.build runs this binary with BAGUA_NET_CPUS=0,
// BAGUA_NET_BUSY_POLL_US=25, BAGUA_NET_STREAMS=4, BAGUA_NET_FLOWS_PER_PEER=8
// and BAGUA_NET_RTO_MIN_US=12000; KnobDefaults.* with no knobs set.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "net_plugin/api/api.h"
#include "net_plugin/base/params.h"
#include "net_plugin/transport/comm.h"
#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

std::vector<std::string> listDir(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* dir = opendir(path.c_str())) {
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(dir);
  }
  return names;
}

// Sends `size` patterned bytes over `link` and checks they arrive intact.
void transferChecked(Link& link, size_t size, uint64_t seed) {
  std::vector<uint8_t> out(size), in(size);
  fillPattern(out.data(), out.size(), seed);
  void* r = postRecv(link.recvComm, in.data(), in.size());
  void* s = postSend(link.sendComm, out.data(), out.size());
  EXPECT_EQ(waitRequest(s), ncclSuccess);
  EXPECT_EQ(waitRequest(r), ncclSuccess);
  EXPECT_EQ(verifyPattern(in.data(), in.size(), seed), -1);
}

#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US 45
#endif

// How many of this process's sockets have option (level, name) == value.
int socketsWithOption(int level, int name, int value) {
  int count = 0;
  for (const std::string& fd : listDir("/proc/self/fd")) {
    int got = 0;
    socklen_t len = sizeof(got);
    if (getsockopt(std::stoi(fd), level, name, &got, &len) == 0 && got == value) ++count;
  }
  return count;
}

// What getsockopt reports after setting TCP_RTO_MIN_US to `us` on a fresh
// socket (the kernel rounds to its clock tick), or -1 without the option.
int kernelRtoMinFor(int us) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int got = -1;
  socklen_t len = sizeof(got);
  if (setsockopt(fd, IPPROTO_TCP, TCP_RTO_MIN_US, &us, sizeof(us)) != 0 ||
      getsockopt(fd, IPPROTO_TCP, TCP_RTO_MIN_US, &got, &len) != 0) {
    got = -1;
  }
  close(fd);
  return got;
}

// Checks that both ends of every stream of a fresh link carry a minimum
// retransmission timeout of `us`, or that the refusal was logged.
void expectRtoMinOnDataSockets(int us, const char* refusal) {
  clearCapturedLog();
  Link link = connectLink();
  transferChecked(link, 1 << 20, 13);
  int expected = kernelRtoMinFor(us);
  if (expected < 0) {
    EXPECT_TRUE(logContains(refusal)) << "a kernel without TCP_RTO_MIN_US must be named";
  } else {
    EXPECT_GE(socketsWithOption(IPPROTO_TCP, TCP_RTO_MIN_US, expected), 2 * params().streams);
  }
  closeLink(link);
}

TEST(Knobs, WorkersRunOnTheCpusNamed) {
  ASSERT_FALSE(params().cpus.empty()) << "run with BAGUA_NET_CPUS set";
  Link link = connectLink();  // starts the engine
  int workers = 0;
  for (const std::string& tid : listDir("/proc/self/task")) {
    std::ifstream comm("/proc/self/task/" + tid + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("bagua-net-", 0) != 0) continue;
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(std::stoi(tid), sizeof(set), &set), 0);
    EXPECT_EQ(CPU_COUNT(&set), 1) << name << " is not pinned";
    EXPECT_TRUE(CPU_ISSET(params().cpus[0], &set)) << name << " runs elsewhere";
    ++workers;
  }
  EXPECT_GT(workers, 0) << "no engine worker threads found";
  closeLink(link);
}

TEST(KnobsBadCpu, ACpuThisMachineLacksIsAWarningNotAFailure) {
  // Run with BAGUA_NET_CPUS naming a CPU that does not exist (e.g. 4095).
  ASSERT_FALSE(params().cpus.empty()) << "run with BAGUA_NET_CPUS set";
  clearCapturedLog();
  Link link = connectLink();  // starts the engine: each worker tries to pin itself
  transferChecked(link, 1 << 20, 11);
  EXPECT_TRUE(logContains("BAGUA_NET_CPUS: cannot pin worker")) << "the refusal must be named";
  closeLink(link);
}

TEST(Knobs, DataSocketsBusyPoll) {
  ASSERT_GT(params().busyPollUs, 0) << "run with BAGUA_NET_BUSY_POLL_US set";
  clearCapturedLog();
  Link link = connectLink();
  transferChecked(link, 1 << 20, 5);
  int busyPolling = socketsWithOption(SOL_SOCKET, SO_BUSY_POLL, params().busyPollUs);
  if (logContains("SO_BUSY_POLL")) {
    EXPECT_EQ(busyPolling, 0) << "refused (no CAP_NET_ADMIN): said so in a WARN";
  } else {
    // Both ends of every stream of the link: send and receive sockets.
    EXPECT_GE(busyPolling, 2 * params().streams);
  }
  closeLink(link);
}

TEST(Knobs, DataSocketsGetTheRtoMinimumAsked) {
  ASSERT_EQ(params().rtoMinUs, 12000) << "run with BAGUA_NET_RTO_MIN_US=12000";
  expectRtoMinOnDataSockets(12000, "BAGUA_NET_RTO_MIN_US=12000: setsockopt(TCP_RTO_MIN_US)");
}

TEST(KnobDefaults, DataSocketsGetTheAutomaticRtoMinimum) {
  ASSERT_EQ(params().rtoMinUs, -1) << "run without BAGUA_NET_RTO_MIN_US";
  expectRtoMinOnDataSockets(kAutoRtoMinUs, "setsockopt(TCP_RTO_MIN_US=");
}

// Streams of a link made under context `ctx`, checked to carry data.
size_t streamsOfNewLink(void* ctx) {
  Link link = connectLink(0, ctx);
  if (link.sendComm == nullptr || link.recvComm == nullptr) return 0;
  transferChecked(link, 3u << 20, 9);
  size_t sendStreams = static_cast<Comm*>(link.sendComm)->streamCount();
  EXPECT_EQ(static_cast<Comm*>(link.recvComm)->streamCount(), sendStreams)
      << "both ends must agree on the stream count";
  closeLink(link);
  return sendStreams;
}

TEST(Knobs, SetNetAttrHintsSetTheStreamsPerConnection) {
  ASSERT_EQ(params().flowsPerPeer, 8) << "run with BAGUA_NET_FLOWS_PER_PEER=8";
  ASSERT_EQ(params().streams, 4) << "run with BAGUA_NET_STREAMS=4";
  void* ctx = nullptr;
  ASSERT_EQ(api::initContext(&ctx, 1, -1, captureLogger), ncclSuccess);
  EXPECT_EQ(streamsOfNewLink(ctx), 4u) << "no hint yet: BAGUA_NET_STREAMS";
  struct Case {
    int channels;
    size_t streams;
  };
  for (Case c : {Case{1, 4}, Case{2, 4}, Case{3, 3}, Case{4, 2}, Case{8, 1}, Case{32, 1}}) {
    ncclNetAttr_v11_t attr{};
    attr.sendCommAttr.maxFlowsPerPeer = c.channels;
    attr.recvCommAttr.maxFlowsPerPeer = c.channels;
    ASSERT_EQ(api::setNetAttr(ctx, &attr), ncclSuccess);
    EXPECT_EQ(streamsOfNewLink(ctx), c.streams) << c.channels << " channels per peer";
  }
  EXPECT_EQ(streamsOfNewLink(nullptr), 4u) << "older ABIs have no hints";
  EXPECT_EQ(api::finalizeContext(ctx), ncclSuccess);
}

}  // namespace
}  // namespace bagua::net::testing
