// GuardedProcess: the server reads its configuration from stdin, stop()
// reaps it, and it never outlives its starter: not when the starter is
// SIGKILLed, not when the watchdog is. It keeps none of the starter's
// descriptors (a listening socket would stay bound after a crash).
#include "runtime/data/guarded_process.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "posix/child_process.h"
#include "posix/fd.h"
#include "runtime/common/error.h"

namespace bagua {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string logPath(const std::string& name) {
  return (fs::temp_directory_path() / ("bagua-guarded-" + name + "-" + std::to_string(::getpid())))
      .string();
}

bool endsWithin(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!processEnded(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(GuardedProcess, TheServerReadsItsConfigurationFromStdin) {
  std::string log = logPath("stdin");
  GuardedProcess p({"cat"}, "port 1234\nrequirepass secret\n", log);
  ASSERT_GT(p.pid(), 0);
  // cat ends at EOF: nobody kept the write end of its stdin open.
  for (int i = 0; i < 500 && p.running(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(p.running());
  EXPECT_EQ(slurp(log), "port 1234\nrequirepass secret\n");
  fs::remove(log);
}

TEST(GuardedProcess, StopReapsTheServer) {
  std::string log = logPath("stop");
  GuardedProcess p({"sleep", "1000"}, "", log);
  EXPECT_TRUE(p.running());
  EXPECT_FALSE(processEnded(p.pid()));
  p.stop(5s);
  EXPECT_TRUE(processEnded(p.pid()));
  EXPECT_TRUE(processEnded(p.watchdogPid()));
  EXPECT_FALSE(p.running());
  fs::remove(log);
}

TEST(GuardedProcess, AMissingProgramIsNamed) {
  try {
    GuardedProcess p({"bagua-no-such-server"}, "", logPath("missing"));
    FAIL() << "started a missing program";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("bagua-no-such-server"), std::string::npos) << e.what();
  }
}

// The starter is SIGKILLed (no destructor, no atexit): the server goes too.
TEST(GuardedProcess, TheServerDiesWithAKilledStarter) {
  int pids[2];
  ASSERT_EQ(::pipe(pids), 0);
  posix::Fd readEnd(pids[0]), writeEnd(pids[1]);
  posix::ChildProcess starter([&] {
    GuardedProcess p({"sleep", "1000"}, "", logPath("starter"));
    pid_t both[2] = {p.pid(), p.watchdogPid()};
    if (::write(writeEnd.get(), both, sizeof(both)) != sizeof(both)) return 1;
    ::pause();
    return 0;
  });
  pid_t both[2] = {0, 0};
  ASSERT_EQ(::read(readEnd.get(), both, sizeof(both)), static_cast<ssize_t>(sizeof(both)));
  EXPECT_FALSE(processEnded(both[0]));
  starter.kill(SIGKILL);
  starter.wait(10s);
  EXPECT_TRUE(endsWithin(both[0], 5s)) << "server " << both[0] << " outlived its starter";
  EXPECT_TRUE(endsWithin(both[1], 5s)) << "watchdog " << both[1] << " outlived its starter";
}

// The watchdog is SIGKILLed: PR_SET_PDEATHSIG takes the server with it.
TEST(GuardedProcess, TheServerDiesWithAKilledWatchdog) {
  GuardedProcess p({"sleep", "1000"}, "", logPath("watchdog"));
  ::kill(p.watchdogPid(), SIGKILL);
  EXPECT_TRUE(endsWithin(p.pid(), 5s));
  p.stop(5s);
}

std::string socketInode(int fd) {
  struct stat st {};
  ::fstat(fd, &st);
  return "socket:[" + std::to_string(st.st_ino) + "]";
}

bool holds(pid_t pid, const std::string& link) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code ignored;
    if (fs::read_symlink(entry.path(), ignored).string() == link) return true;
  }
  return false;
}

TEST(GuardedProcess, KeepsNoneOfTheStartersDescriptors) {
  posix::Fd listener(::socket(AF_INET, SOCK_STREAM, 0));  // inheritable, as C libraries leave them
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  const std::string link = socketInode(listener.get());
  ASSERT_TRUE(holds(::getpid(), link));
  GuardedProcess p({"sleep", "1000"}, "", logPath("fds"));
  // The watchdog closes them once the server has started; exec closes the server's.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while ((holds(p.pid(), link) || holds(p.watchdogPid(), link)) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_FALSE(holds(p.pid(), link));
  EXPECT_FALSE(holds(p.watchdogPid(), link));
  p.stop(5s);
}

}  // namespace
}  // namespace bagua
