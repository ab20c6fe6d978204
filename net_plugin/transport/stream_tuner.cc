// StreamTuner: TCP_INFO sampling and the widen/narrow rule (stream_tuner.h).
#include "net_plugin/transport/stream_tuner.h"

// linux/tcp.h, not netinet/tcp.h: glibc's struct tcp_info stops before the
// chrono and byte counters this reads.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>

#include "net_plugin/base/log.h"

namespace bagua::net {

StreamTraffic& StreamTraffic::operator+=(const StreamTraffic& o) {
  busyUs += o.busyUs;
  limitedUs += o.limitedUs;
  bytesSent += o.bytesSent;
  bytesResent += o.bytesResent;
  return *this;
}

StreamTraffic StreamTraffic::operator-(const StreamTraffic& o) const {
  // Counters only grow; saturate anyway so a reconnected fd cannot wrap.
  auto minus = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  return {minus(busyUs, o.busyUs), minus(limitedUs, o.limitedUs), minus(bytesSent, o.bytesSent),
          minus(bytesResent, o.bytesResent)};
}

TrafficRead readStreamTraffic(int fd, StreamTraffic* out) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return TrafficRead::kFailed;
  // An older kernel fills a shorter struct: the last field read must be in it.
  if (len < offsetof(tcp_info, tcpi_bytes_retrans) + sizeof(info.tcpi_bytes_retrans)) {
    return TrafficRead::kTooOld;
  }
  out->busyUs = info.tcpi_busy_time;
  out->limitedUs = info.tcpi_rwnd_limited + info.tcpi_sndbuf_limited;
  out->bytesSent = info.tcpi_bytes_sent;
  out->bytesResent = info.tcpi_bytes_retrans;
  return TrafficRead::kOk;
}

int nextStreamCount(const StreamTraffic& epoch, int active, int most) {
  if (epoch.busyUs < kMinEpochBusyUs || epoch.bytesSent < kMinEpochBytes) return active;
  double limited = static_cast<double>(epoch.limitedUs) / static_cast<double>(epoch.busyUs);
  double resent = static_cast<double>(epoch.bytesResent) / static_cast<double>(epoch.bytesSent);
  bool lossy =
      resent >= kHighResentShare || (resent >= kLowResentShare && limited < kLowLimitedShare);
  if (lossy) return std::max(active - 1, 1);
  if (limited >= kHighLimitedShare && resent < kLowResentShare) return std::min(active + 1, most);
  return active;
}

int initialStreamCount(int streams, int linkMbps) {
  if (linkMbps <= 0) return streams;
  return std::clamp((linkMbps + kMbpsPerStream - 1) / kMbpsPerStream, 1, std::max(streams, 1));
}

StreamTuner::StreamTuner(std::vector<int> fds, int initial)
    : fds_(std::move(fds)),
      active_(std::clamp(initial, 1, static_cast<int>(fds_.size()))),
      lastAt_(Clock::now()) {
  readAll(&last_);
}

bool StreamTuner::readAll(StreamTraffic* sum) {
  *sum = StreamTraffic{};
  for (int fd : fds_) {
    StreamTraffic one;
    switch (readStreamTraffic(fd, &one)) {
      case TrafficRead::kOk:
        *sum += one;
        break;
      case TrafficRead::kFailed:
        // A stream of a closing comm may have closed its fd already (the
        // other streams still hand out chunks): skip this epoch.
        return false;
      case TrafficRead::kTooOld:
        BAGUA_INFO(NCCL_INIT | NCCL_NET,
                   "BAGUA_NET_ADAPTIVE_STREAMS: this kernel's TCP_INFO lacks the chrono and byte "
                   "counters (Linux 4.19+); the stream count stays at %d",
                   active_);
        enabled_ = false;
        return false;
    }
  }
  return true;
}

bool StreamTuner::maybeRetune(Clock::time_point now) {
  if (!enabled_ || now - lastAt_ < kEpoch) return false;
  lastAt_ = now;
  StreamTraffic total;
  if (!readAll(&total)) return false;
  StreamTraffic epoch = total - last_;
  int next = nextStreamCount(epoch, active_, static_cast<int>(fds_.size()));
  // An epoch too quiet to judge keeps accumulating into the next one.
  if (epoch.busyUs >= kMinEpochBusyUs && epoch.bytesSent >= kMinEpochBytes) last_ = total;
  if (next == active_) return false;
  (next > active_ ? widened_ : narrowed_) += 1;
  BAGUA_TRACE_LOG(
      "stream count %d -> %d (limited %.1f%%, resent %.1f%% of %llu bytes)", active_, next,
      100.0 * static_cast<double>(epoch.limitedUs) / static_cast<double>(epoch.busyUs),
      100.0 * static_cast<double>(epoch.bytesResent) / static_cast<double>(epoch.bytesSent),
      static_cast<unsigned long long>(epoch.bytesSent));
  active_ = next;
  return true;
}

}  // namespace bagua::net
