// RedisShards against real redis-server processes (started here under
// GuardedProcess, loopback only; skipped when redis-server is not
// installed): binary values round-trip through two servers, keys spread over
// both, a wrong or missing password and an unreachable server give their
// own errors, a killed server a CacheConnectError. In a build without hiredis
// the constructor says how to get it.
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
