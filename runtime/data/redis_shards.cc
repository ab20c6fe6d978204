// RedisShards over hiredis's blocking API: commands are appended to each
// server's output buffer, every buffer is flushed, then the replies are read:
// MGET's by RespArrayReader (values straight into their own buffers), the
// others by hiredis's parser fed with large reads.
#include "runtime/data/redis_shards.h"

#include <hiredis.h>
#include <read.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <exception>
#include <string>

#include "runtime/data/cache_errors.h"
#include "runtime/data/key_hash.h"
#include "runtime/data/resp_array_reader.h"

namespace bagua {
namespace {

timeval toTimeval(std::chrono::milliseconds t) {
  return timeval{static_cast<time_t>(t.count() / 1000),
                 static_cast<suseconds_t>(t.count() % 1000 * 1000)};
}

// Bytes read per system call. hiredis's own loop reads 16 KiB at a time:
// 16 calls for a 256 KiB sample.
constexpr size_t kReadBytes = 1 << 20;
// Free value buffers kept for reuse (value_pool.h), per client.
constexpr size_t kPoolBytes = 32 << 20;

std::string where(const RedisServer& s) { return s.host + ":" + std::to_string(s.port); }

void freeReply(redisReply* r) {
  if (r != nullptr) freeReplyObject(r);
}

std::string replyText(const redisReply* r) {
  return r != nullptr && r->str != nullptr ? std::string(r->str, r->len) : std::string();
}

}  // namespace

struct RedisShards::Connection {
  RedisServer server;
  redisContext* context = nullptr;
  std::vector<char> input = std::vector<char>(kReadBytes);
  RespArrayReader arrays{kReadBytes};

  ~Connection() { close(); }
  void close() {
    if (context != nullptr) redisFree(context);
    context = nullptr;
    arrays.reset();
  }
  [[noreturn]] void failIo(const std::string& doing) {
    std::string cause = context != nullptr ? context->errstr : "no connection";
    close();
    BAGUA_THROW(CacheConnectError,
                "Redis at " + where(server) + ": " + doing + " failed: " + cause);
  }
  // The next reply, read with large reads into hiredis's parser.
  std::shared_ptr<redisReply> readReply() {
    void* raw = nullptr;
    if (redisGetReplyFromReader(context, &raw) != REDIS_OK) failIo("parsing a reply");
    while (raw == nullptr) {
      ssize_t n = ::read(context->fd, input.data(), input.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::string cause = n == 0 ? "the server closed the connection"
                            : errno == EAGAIN || errno == EWOULDBLOCK ? "timed out"
                                                                      : std::strerror(errno);
        close();
        BAGUA_THROW(CacheConnectError,
                    "Redis at " + where(server) + ": reading a reply failed: " + cause);
      }
      if (redisReaderFeed(context->reader, input.data(), static_cast<size_t>(n)) != REDIS_OK ||
          redisGetReplyFromReader(context, &raw) != REDIS_OK) {
        failIo("parsing a reply");
      }
    }
    return std::shared_ptr<redisReply>(static_cast<redisReply*>(raw), freeReply);
  }
  // One command, its reply checked for I/O errors only.
  std::shared_ptr<redisReply> command(const std::vector<std::string_view>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lengths;
    for (auto a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    void* raw =
        redisCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lengths.data());
    if (raw == nullptr) failIo(std::string(args[0]));
    return std::shared_ptr<redisReply>(static_cast<redisReply*>(raw), freeReply);
  }
  void connect(const std::string& password, std::chrono::milliseconds timeout) {
    close();
    context = redisConnectWithTimeout(server.host.c_str(), server.port, toTimeval(timeout));
    if (context == nullptr || context->err != 0) {
      failIo("connecting (is a server listening there, and reachable from this host?)");
    }
    if (redisSetTimeout(context, toTimeval(timeout)) != REDIS_OK) failIo("setting the timeout");
    if (!password.empty()) {
      auto reply = command({"AUTH", password});
      if (reply->type == REDIS_REPLY_ERROR) {
        std::string answer = replyText(reply.get());
        close();
        BAGUA_THROW(CacheAuthError, "Redis at " + where(server) + " refused the password: " +
                                        answer + " (pass the server's password as password=...)");
      }
    }
    auto pong = command({"PING"});
    if (pong->type == REDIS_REPLY_ERROR) {
      std::string answer = replyText(pong.get());
      close();
      if (answer.rfind("NOAUTH", 0) == 0) {
        BAGUA_THROW(CacheAuthError, "Redis at " + where(server) +
                                        " needs a password: pass password=... (" + answer + ")");
      }
      BAGUA_THROW(CacheStoreError, "Redis at " + where(server) + " answered PING with " + answer);
    }
  }
};

bool RedisShards::available() { return true; }

RedisShards::RedisShards(std::vector<RedisServer> servers, std::string password,
                         std::chrono::milliseconds timeout)
    : servers_(std::move(servers)),
      password_(std::move(password)),
      timeout_(timeout),
      pool_(ValuePool::create(kPoolBytes)) {
  BAGUA_ENFORCE(!servers_.empty(), "the Redis cache needs at least one server, got none");
  BAGUA_ENFORCE(timeout_.count() > 0,
                "Redis timeout must be above 0 ms, got " + std::to_string(timeout_.count()));
  for (const auto& s : servers_) {
    BAGUA_ENFORCE(!s.host.empty() && s.port > 0 && s.port < 65536,
                  "Redis server '" + where(s) + "' needs a host and a port in 1..65535");
    auto c = std::make_unique<Connection>();
    c->server = s;
    connections_.push_back(std::move(c));
  }
  for (auto& c : connections_) c->connect(password_, timeout_);
}

RedisShards::~RedisShards() = default;

size_t RedisShards::serverOf(std::string_view key) const {
  return serverOfKey(key, servers_.size());
}

void RedisShards::exchange(const Commands& commands, const std::function<void(size_t)>& read) {
  std::exception_ptr first;
  std::vector<bool> sent(commands.size(), false);
  for (size_t s = 0; s < commands.size(); ++s) {
    if (commands[s].empty()) continue;
    Connection& c = *connections_[s];
    try {
      if (c.context == nullptr) c.connect(password_, timeout_);  // failed earlier: retry once
      std::vector<const char*> argv;
      std::vector<size_t> lengths;
      for (auto a : commands[s]) {
        argv.push_back(a.data());
        lengths.push_back(a.size());
      }
      if (redisAppendCommandArgv(c.context, static_cast<int>(argv.size()), argv.data(),
                                 lengths.data()) != REDIS_OK) {
        c.failIo("queueing " + std::string(commands[s][0]));
      }
      // Written now, read below: no server waits for another's reply to be read.
      for (int done = 0; done == 0;) {
        if (redisBufferWrite(c.context, &done) != REDIS_OK) c.failIo("sending");
      }
      sent[s] = true;
    } catch (...) {
      if (!first) first = std::current_exception();
      c.close();
    }
  }
  for (size_t s = 0; s < commands.size(); ++s) {
    if (!sent[s]) continue;
    try {
      read(s);
    } catch (const CacheStoreError&) {  // an error reply, read in full: still in step
      if (!first) first = std::current_exception();
    } catch (...) {
      if (!first) first = std::current_exception();
      connections_[s]->close();
    }
  }
  if (first) std::rethrow_exception(first);
}

namespace {

// hiredis reads the replies of commands other than MGET: an error reply is a
// CacheStoreError naming the server and the command.
void checkReply(const redisReply* r, const RedisServer& server, std::string_view command) {
  if (r->type == REDIS_REPLY_ERROR) {
    BAGUA_THROW(CacheStoreError, "Redis at " + where(server) + " answered " + std::string(command) +
                                     " with " + replyText(r));
  }
}

}  // namespace

RedisValues RedisShards::getMany(const std::vector<std::string_view>& keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  Commands commands(servers_.size());
  std::vector<std::vector<size_t>> order(servers_.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    size_t s = serverOf(keys[i]);
    if (commands[s].empty()) commands[s].push_back("MGET");
    commands[s].push_back(keys[i]);
    order[s].push_back(i);
  }
  RedisValues out;
  out.values_.resize(keys.size());
  out.owners_.resize(keys.size());
  exchange(commands, [&](size_t s) {
    Connection& c = *connections_[s];
    std::vector<std::optional<RespArrayReader::Value>> values;
    std::string error;
    auto status = c.arrays.read(c.context->fd, order[s].size(), *pool_, values, error);
    if (status == RespArrayReader::Status::kServerError) {
      BAGUA_THROW(CacheStoreError, "Redis at " + where(c.server) + " answered MGET with " + error);
    }
    if (status == RespArrayReader::Status::kProtocolError) {
      c.close();
      BAGUA_THROW(CacheStoreError,
                  "Redis at " + where(c.server) + " sent a malformed MGET reply: " + error);
    }
    if (status != RespArrayReader::Status::kOk) {
      c.close();
      BAGUA_THROW(CacheConnectError,
                  "Redis at " + where(c.server) + ": reading a reply failed: " + error);
    }
    for (size_t j = 0; j < order[s].size(); ++j) {
      if (!values[j]) continue;
      size_t i = order[s][j];
      out.owners_[i] = std::move(values[j]->bytes);
      out.values_[i] = std::string_view(out.owners_[i].get(), values[j]->size);
    }
  });
  return out;
}

void RedisShards::setMany(const std::vector<std::pair<std::string_view, std::string_view>>& items) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::vector<std::string_view>> commands(servers_.size());
  for (const auto& [key, value] : items) {
    size_t s = serverOf(key);
    if (commands[s].empty()) commands[s].push_back("MSET");
    commands[s].push_back(key);
    commands[s].push_back(value);
  }
  exchange(commands,
           [&](size_t s) { checkReply(connections_[s]->readReply().get(), servers_[s], "MSET"); });
}

std::vector<std::string> RedisShards::info(std::string_view section) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out(servers_.size());
  exchange(Commands(servers_.size(), {"INFO", section}), [&](size_t s) {
    auto reply = connections_[s]->readReply();
    checkReply(reply.get(), servers_[s], "INFO");
    out[s] = replyText(reply.get());
  });
  return out;
}

std::vector<int64_t> RedisShards::keyCounts() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> out(servers_.size());
  exchange(Commands(servers_.size(), {"DBSIZE"}), [&](size_t s) {
    auto reply = connections_[s]->readReply();
    checkReply(reply.get(), servers_[s], "DBSIZE");
    out[s] = reply->integer;
  });
  return out;
}

}  // namespace bagua
