// RedisShards against real redis-server processes (started here under
// GuardedProcess, loopback only; skipped when redis-server is not
// installed): binary values round-trip through two servers, keys spread over
// both, a wrong or missing password and an unreachable server give their
// own errors, a killed server a CacheConnectError; against a stand-in server,
// a reply cut off by a timeout does not spoil the next connection. In a build
// without hiredis the constructor says how to get it.
#include "runtime/data/redis_shards.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "posix/fd.h"
#include "runtime/data/cache_errors.h"
#include "runtime/data/guarded_process.h"

namespace bagua {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

int freePort() {
  posix::Fd s(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

bool haveRedisServer() { return std::system("command -v redis-server >/dev/null 2>&1") == 0; }

constexpr const char* kPassword = "test-password-1";

// A redis-server on a free loopback port with kPassword, ready to serve.
struct Server {
  int port = freePort();
  std::string log = (fs::temp_directory_path() / ("bagua-redis-test-" + std::to_string(::getpid()) +
                                                  "-" + std::to_string(port)))
                        .string();
  std::unique_ptr<GuardedProcess> process;

  Server() {
    std::string config = "port " + std::to_string(port) +
                         "\nbind 127.0.0.1\nprotected-mode yes\nrequirepass " + kPassword +
                         "\nsave \"\"\nappendonly no\ndir /tmp\n";
    process = std::make_unique<GuardedProcess>(std::vector<std::string>{"redis-server", "-"},
                                               config, log);
    for (int i = 0; i < 500; ++i) {
      try {
        RedisShards probe({{"127.0.0.1", port}}, kPassword, 1s);
        return;
      } catch (const CacheConnectError&) {
        std::this_thread::sleep_for(10ms);
      }
    }
    ADD_FAILURE() << "redis-server on port " << port << " did not start";
  }
  ~Server() {
    process->stop(5s);
    fs::remove(log);
  }
};

std::string cmdline(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RedisShardsProcess, BinaryValuesRoundTripOverTwoServers) {
  if (!RedisShards::available()) GTEST_SKIP() << "built without hiredis";
  if (!haveRedisServer()) GTEST_SKIP() << "redis-server is not installed";
  Server a, b;
  EXPECT_EQ(cmdline(a.process->pid()).find(kPassword), std::string::npos);
  RedisShards redis({{"127.0.0.1", a.port}, {"127.0.0.1", b.port}}, kPassword, 5s);
  std::vector<std::string> keys, values;
  for (int i = 0; i < 200; ++i) {
    keys.push_back("ds_" + std::to_string(i));
    std::string v(static_cast<size_t>(i * 37 % 5000), '\0');
    for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<char>((i * 131 + j * 7) & 0xff);
    values.push_back(v);
  }
  std::vector<std::pair<std::string_view, std::string_view>> items;
  for (size_t i = 0; i < keys.size(); ++i) items.emplace_back(keys[i], values[i]);
  redis.setMany(items);
  std::vector<std::string_view> wanted(keys.begin(), keys.end());
  wanted.push_back("absent");
  RedisValues got = redis.getMany(wanted);
  ASSERT_EQ(got.size(), keys.size() + 1);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].has_value()) << keys[i];
    EXPECT_EQ(*got[i], values[i]) << keys[i];
  }
  EXPECT_FALSE(got[keys.size()].has_value());
  auto counts = redis.keyCounts();
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0] + counts[1], 200);
  EXPECT_GT(counts[0], 50);  // spread by hash
  EXPECT_GT(counts[1], 50);
  EXPECT_NE(redis.info("stats")[0].find("evicted_keys"), std::string::npos);
}

TEST(RedisShardsProcess, PasswordsAndUnreachableServersGiveTheirOwnErrors) {
  if (!RedisShards::available()) GTEST_SKIP() << "built without hiredis";
  if (!haveRedisServer()) GTEST_SKIP() << "redis-server is not installed";
  Server a;
  try {
    RedisShards bad({{"127.0.0.1", a.port}}, "wrong", 5s);
    FAIL() << "a wrong password was accepted";
  } catch (const CacheAuthError& e) {
    EXPECT_NE(std::string(e.what()).find("refused the password"), std::string::npos) << e.what();
  }
  try {
    RedisShards none({{"127.0.0.1", a.port}}, "", 5s);
    FAIL() << "no password was accepted";
  } catch (const CacheAuthError& e) {
    EXPECT_NE(std::string(e.what()).find("needs a password"), std::string::npos) << e.what();
  }
  int closed = freePort();
  try {
    RedisShards unreachable({{"127.0.0.1", closed}}, "", 2s);
    FAIL() << "connected to a closed port";
  } catch (const CacheConnectError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(closed)), std::string::npos)
        << e.what();
  }
}

TEST(RedisShardsProcess, AKilledServerGivesAConnectError) {
  if (!RedisShards::available()) GTEST_SKIP() << "built without hiredis";
  if (!haveRedisServer()) GTEST_SKIP() << "redis-server is not installed";
  ::signal(SIGPIPE, SIG_IGN);  // as Python does: hiredis writes with write(2)
  Server a;
  RedisShards redis({{"127.0.0.1", a.port}}, kPassword, 2s);
  redis.setMany({{"k", "v"}});
  a.process->stop(5s);
  EXPECT_THROW(redis.getMany({"k"}), CacheConnectError);
  EXPECT_THROW(redis.getMany({"k"}), CacheConnectError);  // the reconnect fails too
}

// One of two servers dies mid-batch: the call fails, and the connection to
// the other stays in step (its reply was read), so the next call is right.
TEST(RedisShardsProcess, AFailedBatchLeavesTheOtherServersInStep) {
  if (!RedisShards::available()) GTEST_SKIP() << "built without hiredis";
  if (!haveRedisServer()) GTEST_SKIP() << "redis-server is not installed";
  ::signal(SIGPIPE, SIG_IGN);
  Server a, b;
  RedisShards redis({{"127.0.0.1", a.port}, {"127.0.0.1", b.port}}, kPassword, 2s);
  std::vector<std::string> keys;
  std::vector<std::pair<std::string_view, std::string_view>> items;
  for (int i = 0; i < 40; ++i) keys.push_back("k" + std::to_string(i));
  for (const auto& k : keys) items.emplace_back(k, k);
  redis.setMany(items);
  b.process->stop(5s);
  std::vector<std::string_view> all(keys.begin(), keys.end()), onA;
  for (const auto& k : keys) {
    if (redis.serverOf(k) == 0) onA.push_back(k);
  }
  ASSERT_FALSE(onA.empty());
  EXPECT_THROW(redis.getMany(all), CacheConnectError);
  RedisValues got = redis.getMany(onA);
  for (size_t i = 0; i < onA.size(); ++i) {
    ASSERT_TRUE(got[i].has_value()) << onA[i];
    EXPECT_EQ(*got[i], onA[i]);
  }
}

// A Redis stand-in on a loopback port: answers PING, and MGET of one key
// with "value-of-<key>", except that the first connection's first MGET gets
// half a reply ("*1\r\n$1") and then nothing until the client hangs up.
class HalfReplyServer {
 public:
  HalfReplyServer() {
    listener_ = posix::Fd(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listener_.get(), 8) != 0 ||
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
    }
    port = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~HalfReplyServer() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  int port = 0;

 private:
  void serve() {
    std::vector<std::thread> connections;
    for (int n = 1;; ++n) {
      int fd = ::accept(listener_.get(), nullptr, nullptr);
      if (fd < 0) break;
      connections.emplace_back([fd, n] { answer(posix::Fd(fd), n == 1); });
    }
    for (auto& t : connections) t.join();
  }
  static void answer(posix::Fd fd, bool cutFirstReply) {
    char buf[4096];
    bool cut = false;
    for (;;) {
      ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
      if (n <= 0) return;  // the client hung up
      std::string request(buf, static_cast<size_t>(n));
      std::string reply;
      if (request.find("PING") != std::string::npos) reply = "+PONG\r\n";
      size_t mget = request.find("MGET");
      if (mget != std::string::npos) {
        if (cutFirstReply && !cut) {
          cut = true;
          reply += "*1\r\n$1";  // and the rest never comes
        } else {
          // The key is the last bulk string of the command.
          size_t end = request.rfind("\r\n", request.size() - 3);
          std::string key = request.substr(end + 2, request.size() - end - 4);
          std::string value = "value-of-" + key;
          reply += "*1\r\n$" + std::to_string(value.size()) + "\r\n" + value + "\r\n";
        }
      }
      if (!reply.empty() && ::send(fd.get(), reply.data(), reply.size(), MSG_NOSIGNAL) < 0) return;
    }
  }
  posix::Fd listener_;
  std::thread thread_;
};

// A reply cut off by a timeout is dropped with its connection: the next call
// reconnects and reads the new connection's reply alone (the cut bytes were
// kept, and the next three calls failed as malformed replies).
TEST(RedisShards, AReplyCutOffByATimeoutDoesNotSpoilTheNextConnection) {
  if (!RedisShards::available()) GTEST_SKIP() << "built without hiredis";
  ::signal(SIGPIPE, SIG_IGN);
  HalfReplyServer server;
  RedisShards redis({{"127.0.0.1", server.port}}, "", 300ms);
  try {
    redis.getMany({"k1"});
    FAIL() << "a cut-off reply was accepted";
  } catch (const CacheConnectError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
  }
  RedisValues got = redis.getMany({"k1"});
  ASSERT_EQ(got.size(), 1u);
  ASSERT_TRUE(got[0].has_value());
  EXPECT_EQ(*got[0], "value-of-k1");
}

TEST(RedisShards, ABuildWithoutHiredisSaysHowToGetIt) {
  if (RedisShards::available()) GTEST_SKIP() << "built with hiredis";
  try {
    RedisShards redis({{"127.0.0.1", 6379}}, "", 1s);
    FAIL() << "constructed without hiredis";
  } catch (const NotAvailable& e) {
    EXPECT_NE(std::string(e.what()).find("libhiredis-dev"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace bagua
