// Adaptive stream count (BAGUA_NET_ADAPTIVE_STREAMS, BAGUA_NET_MAX_STREAMS):
// the sending side hands chunks only to the first `active` streams of a
// connection; every epoch it reads TCP_INFO of its streams and moves
// `active` by one, between 1 and the streams opened.
//
// The signal (measured in bench/results/cpu_stream_signals_2026-11-22):
// TCP's chrono statistics say how much of the time a stream had data to send
// it could not send because of the receiver's window or its own send buffer.
// - A large limited share means one stream's window cannot cover the
//   bandwidth-delay product: more streams carry more (45% -> 89% -> 92% of a
//   1 ms RTT link for 1 / 4 / 8 streams with 128K buffers): widen.
// - A limited share near zero means the network, not the window, is the
//   limit; if bytes are then being resent, every extra stream is one more
//   flow probing the bottleneck queue and one more message tail to lose
//   (96% -> 86% -> 69% for 1 / 4 / 8 streams, 5.9% -> 21% resent): narrow.
// The two regimes differ by two orders of magnitude in the limited share
// (< 0.5% against 31-53%), so the thresholds below sit well inside the gap.
// Loss also bounds widening: once the bottleneck queue overflows, another
// stream adds resends, not throughput.
// The chrono counters tick in jiffies (4 ms at HZ=250): an epoch must span
// many ticks, and an epoch with little traffic decides nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace bagua::net {

// What TCP_INFO says about one stream's sending, cumulative since connect.
struct StreamTraffic {
  uint64_t busyUs = 0;     // time with data to send (limited time included)
  uint64_t limitedUs = 0;  // of which limited by the receive window or the send buffer
  uint64_t bytesSent = 0;  // bytes handed to the network, resends included
  uint64_t bytesResent = 0;

  StreamTraffic& operator+=(const StreamTraffic& o);
  StreamTraffic operator-(const StreamTraffic& o) const;
};

// How reading TCP_INFO of one socket went.
enum class TrafficRead { kOk, kFailed, kTooOld };

// Reads TCP_INFO of `fd`: kFailed when getsockopt fails (e.g. a stream closed
// while its comm closes), kTooOld when the kernel's tcp_info lacks the fields
// (before Linux 4.19).
TrafficRead readStreamTraffic(int fd, StreamTraffic* out);

// The rule: the stream count for the next epoch, given one epoch's traffic
// summed over all streams, the count used during it and the most allowed.
int nextStreamCount(const StreamTraffic& epoch, int active, int most);

// The count a connection starts sending on, of the `streams` it opened, over
// a link of `linkMbps` (0: speed unknown, e.g. loopback: all of them). One
// TCP stream fills kMbpsPerStream, so a slower link starts on fewer and the
// rule widens from there while the streams are window-limited. Measured over
// an emulated 10 Gbit/s link with 1 ms each way (bench/results/
// slow_link_gpu_2026-11-28): starting on 4 and narrowing to 1 moved
// 0.72-0.96 GB/s at 16-256 MiB, starting on 1 moved 0.92-1.00.
int initialStreamCount(int streams, int linkMbps);
inline constexpr int kMbpsPerStream = 10000;

// Widen: at least kHighLimitedShare of the busy time limited, and under
// kLowResentShare of the bytes resent (the path still has room).
// Narrow: at least kHighResentShare resent whatever the limited share (the
// bottleneck queue overflows: 8 streams with 128K buffers resent 14.6% while
// 31% limited, and carried less than 4 at 1 MiB), or at least
// kLowResentShare resent with under kLowLimitedShare limited.
// Between the thresholds the count holds, which keeps it from oscillating.
constexpr double kHighLimitedShare = 0.20;
constexpr double kLowLimitedShare = 0.05;
constexpr double kHighResentShare = 0.05;
constexpr double kLowResentShare = 0.01;
// An epoch with less busy time (summed over streams) or fewer bytes than this
// says too little to act on.
constexpr uint64_t kMinEpochBusyUs = 40000;
constexpr uint64_t kMinEpochBytes = 4 << 20;

// Per send comm; not thread-safe (the comm calls it under its mutex).
class StreamTuner {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kEpoch{100};

  // `fds`: every stream of the connection, in index order.
  StreamTuner(std::vector<int> fds, int initial);

  int active() const { return active_; }
  int most() const { return static_cast<int>(fds_.size()); }
  // How often the count went up and down so far.
  int widened() const { return widened_; }
  int narrowed() const { return narrowed_; }

  // Once an epoch has passed since the last decision, reads every stream and
  // applies nextStreamCount. Returns true when the count changed.
  bool maybeRetune(Clock::time_point now);

 private:
  // Sums every stream; false when one could not be read (the epoch is then
  // skipped, or adaptation stops for good on a kernel too old).
  bool readAll(StreamTraffic* sum);

  std::vector<int> fds_;
  int active_;
  int widened_ = 0;
  int narrowed_ = 0;
  bool enabled_ = true;  // false once TCP_INFO proved unusable
  StreamTraffic last_;
  Clock::time_point lastAt_;
};

}  // namespace bagua::net
