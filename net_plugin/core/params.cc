// Reading and validating the environment knobs declared in params.h.
#include "net_plugin/core/params.h"

#include <cstdlib>

#include "net_plugin/core/log.h"
#include "net_plugin/core/status.h"

namespace bagua::net {
namespace {

const char* envOrNull(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && value[0] != '\0') ? value : nullptr;
}

[[noreturn]] void badKnob(const char* name, const char* value, const char* expected) {
  throw NetError(Status::kInvalidArgument, std::string("environment knob ") + name + "=\"" + value +
                                               "\" is invalid: expected " + expected);
}

void readInt(const char* name, int lo, int hi, int* out) {
  const char* value = envOrNull(name);
  if (value == nullptr) return;
  char* end = nullptr;
  long parsed = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || parsed < lo || parsed > hi) {
    std::string expected = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    badKnob(name, value, expected.c_str());
  }
  *out = static_cast<int>(parsed);
}

void readBytes(const char* name, size_t lo, size_t hi, size_t* out) {
  const char* value = envOrNull(name);
  if (value == nullptr) return;
  size_t parsed = 0;
  if (!parseBytes(value, &parsed) || parsed < lo || parsed > hi) {
    std::string expected =
        "a size (e.g. 256K, 4M) in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] bytes";
    badKnob(name, value, expected.c_str());
  }
  *out = parsed;
}

void readEngine(EngineKind* out) {
  const char* value = envOrNull("BAGUA_NET_ENGINE");
  if (value == nullptr) return;
  std::string text(value);
  if (text == "auto") {
    *out = EngineKind::kAuto;
  } else if (text == "io_uring" || text == "uring") {
    *out = EngineKind::kIoUring;
  } else if (text == "epoll") {
    *out = EngineKind::kEpoll;
  } else {
    badKnob("BAGUA_NET_ENGINE", value, "auto, io_uring or epoll");
  }
}

Params loadParams() {
  Params p;
  readInt("BAGUA_NET_STREAMS", 1, 64, &p.streams);
  readInt("BAGUA_NET_THREADS", 0, 64, &p.threads);
  readInt("BAGUA_NET_SPIN_US", -1, 100000, &p.spinUs);
  readInt("BAGUA_NET_RATE_LIMIT_MBPS", 0, 100 * 1000 * 1000, &p.rateLimitMbps);
  readEngine(&p.engine);
  readBytes("BAGUA_NET_CHUNK_BYTES", 4096, 64u << 20, &p.chunkBytes);
  readBytes("BAGUA_NET_MIN_SPLIT_BYTES", 0, 64u << 20, &p.minSplitBytes);
  readInt("BAGUA_NET_SPEED_MBPS", 0, 100 * 1000 * 1000, &p.speedMbps);
  readInt("BAGUA_NET_CONNECT_TIMEOUT_MS", 1, 24 * 3600 * 1000, &p.connectTimeoutMs);
  readInt("BAGUA_NET_HANDSHAKE_TIMEOUT_MS", 1, 24 * 3600 * 1000, &p.handshakeTimeoutMs);
  readInt("BAGUA_NET_PEER_TIMEOUT_SEC", 1, 24 * 3600, &p.peerTimeoutSec);
  readBytes("BAGUA_NET_SOCKET_BUFFER_BYTES", 0, 1u << 30, &p.socketBufferBytes);
  if (const char* v = envOrNull("NCCL_SOCKET_IFNAME")) p.socketIfname = v;
  if (const char* v = envOrNull("NCCL_SOCKET_FAMILY")) {
    p.socketFamily = v;
    if (p.socketFamily != "AF_INET" && p.socketFamily != "AF_INET6") {
      badKnob("NCCL_SOCKET_FAMILY", v, "AF_INET or AF_INET6");
    }
  }
  return p;
}

}  // namespace

bool parseBytes(const std::string& text, size_t* out) {
  if (text.empty() || text[0] == '-') return false;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return false;
  std::string suffix(end);
  unsigned shift = 0;
  if (suffix == "" || suffix == "B") {
    shift = 0;
  } else if (suffix == "K" || suffix == "k" || suffix == "KiB") {
    shift = 10;
  } else if (suffix == "M" || suffix == "m" || suffix == "MiB") {
    shift = 20;
  } else if (suffix == "G" || suffix == "g" || suffix == "GiB") {
    shift = 30;
  } else {
    return false;
  }
  if (shift > 0 && value > (~0ull >> shift)) return false;
  *out = static_cast<size_t>(value << shift);
  return true;
}

const Params& params() {
  // A throwing initializer leaves the static unset, so a fixed environment is
  // read again on the next call.
  static const Params loaded = loadParams();
  return loaded;
}

const std::vector<std::string>& paramNames() {
  static const std::vector<std::string> names = {
      "BAGUA_NET_STREAMS",
      "BAGUA_NET_THREADS",
      "BAGUA_NET_SPIN_US",
      "BAGUA_NET_RATE_LIMIT_MBPS",
      "BAGUA_NET_ENGINE",
      "BAGUA_NET_CHUNK_BYTES",
      "BAGUA_NET_MIN_SPLIT_BYTES",
      "BAGUA_NET_SPEED_MBPS",
      "BAGUA_NET_CONNECT_TIMEOUT_MS",
      "BAGUA_NET_HANDSHAKE_TIMEOUT_MS",
      "BAGUA_NET_PEER_TIMEOUT_SEC",
      "BAGUA_NET_SOCKET_BUFFER_BYTES",
      "NCCL_SOCKET_IFNAME",
      "NCCL_SOCKET_FAMILY",
  };
  return names;
}

void logParams() {
  for (const std::string& name : paramNames()) {
    if (const char* value = envOrNull(name.c_str())) {
      BAGUA_INFO(NCCL_INIT | NCCL_NET, "%s set by environment to %s", name.c_str(), value);
    }
  }
}

}  // namespace bagua::net
