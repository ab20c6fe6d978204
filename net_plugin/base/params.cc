// Reading and validating the environment knobs declared in params.h.
#include "net_plugin/base/params.h"

#include <algorithm>
#include <cstdlib>

#include "net_plugin/base/log.h"
#include "net_plugin/base/status.h"

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

void readZeroCopy(ZeroCopyMode* out) {
  const char* value = envOrNull("BAGUA_NET_ZEROCOPY");
  if (value == nullptr) return;
  std::string text(value);
  if (text == "off" || text == "0") {
    *out = ZeroCopyMode::kOff;
  } else if (text == "auto" || text == "1") {
    *out = ZeroCopyMode::kAuto;
  } else if (text == "always") {
    *out = ZeroCopyMode::kAlways;
  } else {
    badKnob("BAGUA_NET_ZEROCOPY", value, "off, auto or always");
  }
}

void readCpus(std::vector<int>* out) {
  const char* value = envOrNull("BAGUA_NET_CPUS");
  if (value == nullptr) return;
  if (!parseCpuList(value, out)) badKnob("BAGUA_NET_CPUS", value, "a CPU list such as 0-3,8");
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
  readZeroCopy(&p.zeroCopy);
  readBytes("BAGUA_NET_ZEROCOPY_BYTES", 0, 64u << 20, &p.zeroCopyBytes);
  readCpus(&p.cpus);
  readInt("BAGUA_NET_BUSY_POLL_US", 0, 1000000, &p.busyPollUs);
  readInt("BAGUA_NET_FLOWS_PER_PEER", 0, 4096, &p.flowsPerPeer);
  readInt("BAGUA_NET_RTO_MIN_US", -1, 1000000, &p.rtoMinUs);
  readInt("BAGUA_NET_ADAPTIVE_STREAMS", 0, 1, &p.adaptiveStreams);
  readInt("BAGUA_NET_MAX_STREAMS", 0, 64, &p.maxStreams);
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

bool parseCpuList(const std::string& text, std::vector<int>* out) {
  constexpr long kMaxCpu = 4096;
  std::vector<int> cpus;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    long first = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || end == item.c_str() || first < 0 || first >= kMaxCpu) return false;
    long last = first;
    if (*end == '-') {
      const char* rest = end + 1;
      last = std::strtol(rest, &end, 10);
      if (end == rest || last < first || last >= kMaxCpu) return false;
    }
    if (*end != '\0') return false;
    for (long cpu = first; cpu <= last; ++cpu) cpus.push_back(static_cast<int>(cpu));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  *out = std::move(cpus);
  return true;
}

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

int streamsToOpen(const Params& p) {
  return p.adaptiveStreams != 0 ? std::max(p.streams, p.maxStreams) : p.streams;
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
      "BAGUA_NET_ZEROCOPY",
      "BAGUA_NET_ZEROCOPY_BYTES",
      "BAGUA_NET_CPUS",
      "BAGUA_NET_BUSY_POLL_US",
      "BAGUA_NET_FLOWS_PER_PEER",
      "BAGUA_NET_RTO_MIN_US",
      "BAGUA_NET_ADAPTIVE_STREAMS",
      "BAGUA_NET_MAX_STREAMS",
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
