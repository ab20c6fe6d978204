// Knobs that act on threads and sockets rather than on the data path:
// BAGUA_NET_CPUS pins the engine's workers, BAGUA_NET_BUSY_POLL_US sets
// SO_BUSY_POLL on data sockets. tests/meson.build runs this binary with
// BAGUA_NET_CPUS=0 and BAGUA_NET_BUSY_POLL_US=25.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "net_plugin/api/api.h"
#include "net_plugin/core/params.h"
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

TEST(Knobs, DataSocketsBusyPoll) {
  ASSERT_GT(params().busyPollUs, 0) << "run with BAGUA_NET_BUSY_POLL_US set";
  clearCapturedLog();
  Link link = connectLink();
  std::vector<uint8_t> out(1 << 20), in(1 << 20);
  fillPattern(out.data(), out.size(), 5);
  void* r = postRecv(link.recvComm, in.data(), in.size());
  void* s = postSend(link.sendComm, out.data(), out.size());
  ASSERT_EQ(waitRequest(s), ncclSuccess);
  ASSERT_EQ(waitRequest(r), ncclSuccess);
  EXPECT_EQ(verifyPattern(in.data(), in.size(), 5), -1);
  int busyPolling = 0;
  for (const std::string& fd : listDir("/proc/self/fd")) {
    int value = 0;
    socklen_t len = sizeof(value);
    if (getsockopt(std::stoi(fd), SOL_SOCKET, SO_BUSY_POLL, &value, &len) == 0 &&
        value == params().busyPollUs) {
      ++busyPolling;
    }
  }
  if (logContains("SO_BUSY_POLL")) {
    EXPECT_EQ(busyPolling, 0) << "refused (no CAP_NET_ADMIN): said so in a WARN";
  } else {
    // Both ends of every stream of the link: send and receive sockets.
    EXPECT_GE(busyPolling, 2 * params().streams);
  }
  closeLink(link);
}

}  // namespace
}  // namespace bagua::net::testing
