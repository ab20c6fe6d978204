// Rendezvous: torchrun's variables, rank 0's server, join and finish.
#include "runtime/store/rendezvous.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>

#include "runtime/common/error.h"
#include "runtime/store/barrier.h"
#include "runtime/store/file_store.h"
#include "runtime/store/store_text.h"
#include "runtime/store/tcp_store.h"
#include "runtime/store/tcp_store_server.h"

namespace bagua {
namespace {

using Clock = std::chrono::steady_clock;

// Longest timeout a knob accepts: a year.
constexpr double kMaxSeconds = 365.0 * 24 * 3600;

const char kTorchrunHint[] =
    " (torchrun sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK)";

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// The whole text of variable `name` parsed as a T (std::from_chars: no
// spaces, no suffixes); nullopt when unset. `form` names what was expected,
// for the message ("an integer").
template <typename T>
std::optional<T> envParsed(const char* name, const char* form) {
  auto text = env(name);
  if (!text) return std::nullopt;
  T v{};
  const char* first = text->data();
  const char* last = first + text->size();
  auto [end, ec] = std::from_chars(first, last, v);
  BAGUA_ENFORCE(!text->empty() && ec == std::errc() && end == last,
                std::string("environment variable ") + name + "='" + *text + "' is not " + form);
  return v;
}

// Throws unless `ok`: "environment variable NAME=VALUE is out of range: must
// be in BOUNDS".
void enforceRange(bool ok, const char* name, const std::string& bounds) {
  BAGUA_ENFORCE(ok, std::string("environment variable ") + name + "=" + env(name).value_or("") +
                        " is out of range: must be in " + bounds);
}

// The integer in variable `name`, which must lie in [lo, hi]; nullopt when
// unset. `range` says what the bounds mean, for the message.
std::optional<int64_t> envInt(const char* name, int64_t lo, int64_t hi, const std::string& range) {
  auto v = envParsed<int64_t>(name, "an integer");
  if (v)
    enforceRange(*v >= lo && *v <= hi, name,
                 std::to_string(lo) + ".." + std::to_string(hi) + range);
  return v;
}

// The duration in variable `name`, a positive number of seconds (decimals
// allowed, at most a year); nullopt when unset.
std::optional<std::chrono::milliseconds> envSeconds(const char* name) {
  auto seconds = envParsed<double>(name, "a number of seconds");
  if (!seconds) return std::nullopt;
  enforceRange(*seconds >= 0.001 && *seconds <= kMaxSeconds, name,
               "0.001.." + std::to_string(int64_t(kMaxSeconds)) + " seconds");
  return std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
}

int64_t requireInt(const char* name, int64_t lo, int64_t hi, const std::string& range) {
  auto v = envInt(name, lo, hi, range);
  BAGUA_ENFORCE(v.has_value(),
                std::string("environment variable ") + name + " is not set" + kTorchrunHint);
  return *v;
}

std::chrono::milliseconds remaining(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

// Rank 0's verdict: one kind byte, then the world size (ok) or the message.
constexpr char kVerdictOk = 'O';
constexpr char kVerdictTimeout = 'T';
constexpr char kVerdictInvalid = 'I';
// How long rank 0 keeps serving after a failed rendezvous so that the others
// can read why, and how much longer than their own timeout the others wait
// for the verdict.
constexpr std::chrono::seconds kVerdictGrace{2};

std::string worldText(int worldSize) { return "worldSize=" + std::to_string(worldSize); }

std::vector<uint8_t> encodeVerdict(char kind, const std::string& message) {
  std::string text = kind + message;
  return std::vector<uint8_t>(text.begin(), text.end());
}

[[noreturn]] void throwVerdict(char kind, const std::string& message) {
  if (kind == kVerdictTimeout) BAGUA_THROW(TimeoutError, message);
  BAGUA_THROW(InvalidArgument, message);
}

void validate(const RendezvousInfo& info, bool overTcp) {
  BAGUA_ENFORCE(info.worldSize >= 1,
                "rendezvous: world size " + std::to_string(info.worldSize) + " is not >= 1");
  BAGUA_ENFORCE(info.rank >= 0 && info.rank < info.worldSize,
                "rendezvous: rank " + std::to_string(info.rank) + " is not in 0.." +
                    std::to_string(info.worldSize - 1));
  BAGUA_ENFORCE(info.localRank >= 0 && info.localRank < info.worldSize,
                "rendezvous: local rank " + std::to_string(info.localRank) + " is not in 0.." +
                    std::to_string(info.worldSize - 1));
  if (!overTcp) return;
  BAGUA_ENFORCE(!info.masterAddr.empty(), "rendezvous: the master address is empty");
  BAGUA_ENFORCE(
      info.masterPort > 0 && info.masterPort <= 65535,
      "rendezvous: master port " + std::to_string(info.masterPort) + " is not in 1..65535");
}

}  // namespace

RendezvousInfo rendezvousInfoFromEnv() {
  RendezvousInfo info;
  bool fileStore = env("BAGUA_STORE_DIR").has_value();
  info.worldSize = static_cast<int>(requireInt("WORLD_SIZE", 1, 1 << 24, ""));
  std::string ranks = " (WORLD_SIZE=" + std::to_string(info.worldSize) + ")";
  info.rank = static_cast<int>(requireInt("RANK", 0, info.worldSize - 1, ranks));
  info.localRank =
      static_cast<int>(envInt("LOCAL_RANK", 0, info.worldSize - 1, ranks).value_or(info.rank));
  auto addr = env("MASTER_ADDR");
  BAGUA_ENFORCE(fileStore || addr.has_value(),
                std::string("environment variable MASTER_ADDR is not set") + kTorchrunHint);
  BAGUA_ENFORCE(!addr || !addr->empty(), "environment variable MASTER_ADDR is empty");
  info.masterAddr = addr.value_or("");
  auto port = envInt("MASTER_PORT", 1, 65535, "");
  BAGUA_ENFORCE(fileStore || port.has_value(),
                std::string("environment variable MASTER_PORT is not set") + kTorchrunHint);
  info.masterPort = static_cast<int>(port.value_or(0));
  return info;
}

RendezvousOptions rendezvousOptionsFromEnv() {
  RendezvousOptions options;
  if (auto dir = env("BAGUA_STORE_DIR")) {
    BAGUA_ENFORCE(!dir->empty(), "environment variable BAGUA_STORE_DIR is empty");
    options.storeDir = *dir;
  }
  // Timeouts are in seconds (_S) across the runtime and the Python package.
  BAGUA_ENFORCE(!env("BAGUA_RENDEZVOUS_TIMEOUT_MS"),
                "environment variable BAGUA_RENDEZVOUS_TIMEOUT_MS is no longer read: set "
                "BAGUA_RENDEZVOUS_TIMEOUT_S (seconds) instead");
  if (auto timeout = envSeconds("BAGUA_RENDEZVOUS_TIMEOUT_S")) options.timeout = *timeout;
  return options;
}

Rendezvous::Rendezvous(const RendezvousInfo& info, RendezvousOptions options)
    : info_(info), options_(std::move(options)), deadline_(Clock::now() + options_.timeout) {
  bool overTcp = options_.storeDir.empty();
  validate(info_, overTcp);
  if (!overTcp) {
    store_ = std::make_unique<FileStore>(options_.storeDir);
    join();
    return;
  }
  if (info_.rank == 0) {
    try {
      server_ = std::make_unique<TcpStoreServer>(info_.masterPort, options_.bindHost);
    } catch (const CommError& e) {
      BAGUA_THROW(CommError, std::string("rendezvous: rank 0 cannot start the store server "
                                         "(is MASTER_PORT in use?): ") +
                                 e.what());
    }
  }
  TcpStoreOptions tcp;
  tcp.connectTimeout = remaining(deadline_);
  try {
    store_ = std::make_unique<TcpStore>(info_.masterAddr, info_.masterPort, tcp);
  } catch (const TimeoutError& e) {
    BAGUA_THROW(TimeoutError, "rendezvous '" + options_.prefix + "': rank 0 of " +
                                  std::to_string(info_.worldSize) + " did not join within " +
                                  store_text::describeDuration(options_.timeout) +
                                  ": its store server at " + info_.masterAddr + ":" +
                                  std::to_string(info_.masterPort) +
                                  " never accepted a connection (check MASTER_ADDR and "
                                  "MASTER_PORT): " +
                                  e.what());
  }
  join();
}

Rendezvous::~Rendezvous() = default;

int Rendezvous::serverPort() const { return server_ ? server_->port() : info_.masterPort; }

std::string Rendezvous::key(const std::string& what, int rank) const {
  return "rendezvous/" + options_.prefix + "/" + what + "/" + std::to_string(rank);
}

// Announces this rank (its value carries the world size, so ranks started
// with different WORLD_SIZE values are caught) and waits for the verdict.
void Rendezvous::join() {
  int64_t joins = store_->add(key("joins", info_.rank), 1);
  BAGUA_ENFORCE(joins == 1, "rendezvous '" + options_.prefix + "': rank " +
                                std::to_string(info_.rank) +
                                " joined twice: two processes have the same RANK, or the store "
                                "directory holds keys of an earlier run (use a fresh one)");
  std::string world = worldText(info_.worldSize);
  store_->set(key("rank", info_.rank), std::vector<uint8_t>(world.begin(), world.end()));
  if (info_.rank == 0) {
    decide();
  } else {
    awaitVerdict();
  }
}

void Rendezvous::decide() {
  std::vector<std::string> keys;
  for (int r = 0; r < info_.worldSize; ++r) keys.push_back(key("rank", r));
  std::string mine = worldText(info_.worldSize);
  char kind = kVerdictOk;
  std::string message = mine;
  std::vector<int> missing;
  try {
    store_->wait(keys, remaining(deadline_));
    for (int r = 1; r < info_.worldSize && kind == kVerdictOk; ++r) {
      auto value = store_->get(keys[size_t(r)], std::chrono::milliseconds(0));
      std::string theirs(value.begin(), value.end());
      if (theirs != mine) {
        kind = kVerdictInvalid;
        message = "rendezvous '" + options_.prefix + "': rank " + std::to_string(r) + " has " +
                  theirs + " but rank 0 has " + mine;
      }
    }
  } catch (const TimeoutError&) {
    missing = missingRanks(*store_, info_.worldSize, [&](int r) { return key("rank", r); });
    kind = kVerdictTimeout;
    message = missingMessage(missing, "join");
  }
  store_->set(key("verdict", 0), encodeVerdict(kind, message));
  if (kind == kVerdictOk) return;
  // Keep the server up until the ranks that came have read the verdict.
  std::vector<std::string> acks;
  for (int r = 1; r < info_.worldSize; ++r) {
    if (!std::count(missing.begin(), missing.end(), r)) acks.push_back(key("ack", r));
  }
  try {
    store_->wait(acks, kVerdictGrace);
  } catch (const TimeoutError&) {
    // A rank that cannot read the verdict now gets CommError instead.
  }
  throwVerdict(kind, message);
}

void Rendezvous::awaitVerdict() {
  std::vector<uint8_t> verdict;
  try {
    verdict = store_->get(key("verdict", 0), remaining(deadline_) + kVerdictGrace);
  } catch (const TimeoutError&) {
    // No verdict: rank 0 never came (FileStore), or started much later.
    auto missing = missingRanks(*store_, info_.worldSize, [&](int r) { return key("rank", r); });
    BAGUA_THROW(TimeoutError, missingMessage(missing, "join"));
  }
  char kind = verdict.empty() ? kVerdictInvalid : static_cast<char>(verdict[0]);
  std::string message(verdict.begin() + (verdict.empty() ? 0 : 1), verdict.end());
  if (kind == kVerdictOk) {
    std::string mine = worldText(info_.worldSize);
    BAGUA_ENFORCE(message == mine, "rendezvous '" + options_.prefix + "': rank " +
                                       std::to_string(info_.rank) + " has " + mine +
                                       " but rank 0 has " + message);
    return;
  }
  store_->set(key("ack", info_.rank), {1});
  throwVerdict(kind, message);
}

std::string Rendezvous::missingMessage(const std::vector<int>& missing,
                                       const std::string& verb) const {
  return "rendezvous '" + options_.prefix + "': " + describeRanks(missing) + " of " +
         std::to_string(info_.worldSize) + " did not " + verb + " within " +
         store_text::describeDuration(options_.timeout);
}

void Rendezvous::finish(std::chrono::milliseconds timeout) {
  store_->set(key("finished", info_.rank), {1});
  if (info_.rank != 0) return;
  std::vector<std::string> keys;
  for (int r = 0; r < info_.worldSize; ++r) keys.push_back(key("finished", r));
  try {
    store_->wait(keys, timeout);
  } catch (const TimeoutError&) {
    auto missing =
        missingRanks(*store_, info_.worldSize, [&](int r) { return key("finished", r); });
    BAGUA_THROW(TimeoutError, "rendezvous '" + options_.prefix + "': " + describeRanks(missing) +
                                  " of " + std::to_string(info_.worldSize) +
                                  " did not finish within " +
                                  store_text::describeDuration(timeout));
  }
}

}  // namespace bagua
