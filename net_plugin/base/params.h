// Every environment knob of the plugin, in one place.
//
// Knobs are read once, the first time any is needed (the values of a process
// never change afterwards; tests that need other values start a new process).
// Values that differ from the default are logged at INFO (INIT|NET) by
// logParams(). docs/env.md mirrors this table; env_doc_test.cc checks that
// every name here appears there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bagua::net {

enum class EngineKind { kAuto, kIoUring, kEpoll };
enum class ZeroCopyMode { kOff, kAuto, kAlways };

// The minimum retransmission timeout BAGUA_NET_RTO_MIN_US=-1 picks: 50 to
// 1000 times a datacenter round trip, so a spurious timeout needs a delay
// spike that large, yet 20 times shorter than the kernel's default.
constexpr int kAutoRtoMinUs = 10000;

struct Params {
  // BAGUA_NET_STREAMS (int, 4): TCP streams per connection. Every chunk of a
  // message may travel on any stream, so one slow flow cannot hold a message
  // back. 1 gives a single-stream plugin (for comparisons). Range 1..64.
  int streams = 4;

  // BAGUA_NET_THREADS (int, 0 = auto): engine worker threads shared by every
  // connection of the process. Auto is twice the CPUs the process may use
  // (affinity mask, cgroup v2 or v1 CPU quota: cpu_budget.h), at most 16, and 2
  // below 4 CPUs: on loopback and fast NICs the kernel's copies run on these
  // threads, so they bound throughput. Range 0..64.
  int threads = 0;

  // BAGUA_NET_SPIN_US (int, -1 = auto): after any activity a worker keeps
  // polling for this long before it sleeps, so the next message needs no
  // thread wake-up (lower latency, more CPU). Auto is 50 when the process
  // may use 8 or more CPUs and 0 below. Range -1..100000.
  int spinUs = -1;

  // BAGUA_NET_RATE_LIMIT_MBPS (int, 0 = off): a testing aid that caps what
  // each NCCL rank sends, in Mbit/s, to emulate a slower NIC where tc is not
  // available. Shared by all connections of a v11 communicator (all of the
  // process for older ABIs).
  int rateLimitMbps = 0;

  // BAGUA_NET_ENGINE (auto | io_uring | epoll): the I/O engine. auto takes
  // io_uring and falls back to epoll where io_uring is unavailable (container
  // seccomp profiles block it); below 4 usable CPUs it takes epoll unless
  // zero-copy sends are on (cpu_budget.h says why). Naming io_uring makes the
  // fallback an error.
  EngineKind engine = EngineKind::kAuto;

  // BAGUA_NET_CHUNK_BYTES (bytes, 256 KiB): the largest piece of a message
  // handed to one stream at a time. Smaller balances streams more finely,
  // larger costs fewer system calls. Range 4 KiB..64 MiB.
  size_t chunkBytes = 256 * 1024;

  // BAGUA_NET_MIN_SPLIT_BYTES (bytes, 64 KiB): messages up to this size travel
  // whole on one stream (lowest latency); larger ones are cut into chunks.
  size_t minSplitBytes = 64 * 1024;

  // BAGUA_NET_SPEED_MBPS (int, 0): the link speed reported to NCCL, in Mbit/s.
  // 0 reads /sys/class/net/IF/speed and uses 10000 (NCCL's own default) where
  // the NIC reports none (-1 on virtual NICs, nothing on lo).
  int speedMbps = 0;

  // BAGUA_NET_CONNECT_TIMEOUT_MS (int, 60000): how long connect() keeps
  // retrying a refused or unreachable listener before it reports an error.
  int connectTimeoutMs = 60000;

  // BAGUA_NET_HANDSHAKE_TIMEOUT_MS (int, 10000): an accepted connection that
  // has not presented a complete hello within this time is closed and logged.
  int handshakeTimeoutMs = 10000;

  // BAGUA_NET_PEER_TIMEOUT_SEC (int, 30): a peer host that stops answering
  // (no FIN or RST, e.g. power loss) is declared dead after about this long:
  // TCP_USER_TIMEOUT for unacknowledged data and TCP keepalive for idle
  // connections. A peer process that dies is detected at once regardless.
  int peerTimeoutSec = 30;

  // BAGUA_NET_SOCKET_BUFFER_BYTES (bytes, 0): SO_SNDBUF/SO_RCVBUF of data
  // streams; 0 leaves the kernel's autotuning on (usually best).
  size_t socketBufferBytes = 0;

  // BAGUA_NET_ZEROCOPY (off | auto | always, off): send chunks of at least
  // BAGUA_NET_ZEROCOPY_BYTES with io_uring SEND_ZC, so the kernel transmits
  // from NCCL's buffer instead of copying it (a request completes once the
  // kernel has let go of its pages, i.e. after the peer's ACK). auto turns it
  // off per stream as soon as the kernel reports that it copied anyway (always
  // on loopback and veth); always keeps it on (for tests and measurements).
  // Needs the io_uring engine and Linux 6.2; otherwise sends copy.
  ZeroCopyMode zeroCopy = ZeroCopyMode::kOff;

  // BAGUA_NET_ZEROCOPY_BYTES (bytes, 64 KiB): the smallest chunk sent with
  // zero-copy; smaller ones cost more to pin and track than to copy.
  size_t zeroCopyBytes = 64 * 1024;

  // BAGUA_NET_CPUS (CPU list, empty): pins engine worker i to the i-th CPU of
  // the list, round-robin (e.g. "8-15" or "2,3,6,7"). Empty leaves workers on
  // the CPUs they inherit (NCCL pins its threads to the GPU's NUMA node).
  std::vector<int> cpus;

  // BAGUA_NET_BUSY_POLL_US (int, 0 = off): SO_BUSY_POLL on data sockets: a
  // receive that finds no data polls the NIC queue for this long instead of
  // sleeping (lower latency on NICs with NAPI busy polling, more CPU).
  int busyPollUs = 0;

  // BAGUA_NET_FLOWS_PER_PEER (int, 0 = off): with NCCL v11, aim for this many
  // TCP flows per peer in total: NCCL's setNetAttr says how many connections
  // (channels) it runs to each peer, and each connection then opens
  // ceil(this / channels) streams, at most BAGUA_NET_STREAMS. Off: every
  // connection opens BAGUA_NET_STREAMS.
  int flowsPerPeer = 0;

  // BAGUA_NET_RTO_MIN_US (int, -1 = auto = kAutoRtoMinUs, 0 = the
  // kernel's): TCP's minimum retransmission timeout on data sockets
  // (TCP_RTO_MIN_US, Linux 6.15). The kernel's 200 ms is what a stream waits
  // when the last packets of a chunk are lost, and the whole message waits
  // with it (measured: bench/results/cpu_rto_2026-11-22).
  int rtoMinUs = -1;

  // BAGUA_NET_ADAPTIVE_STREAMS (0 | 1, 1): the sender moves how many of a
  // connection's streams carry chunks, between 1 and the streams it opened:
  // every 100 ms it reads TCP_INFO and drops a stream while bytes are being
  // resent (each flow adds loss and a message tail to lose), and adds one
  // back while its streams are mostly window- or buffer-limited and lossless
  // (stream_tuner.h). 0: every stream carries chunks all the time.
  int adaptiveStreams = 1;

  // BAGUA_NET_MAX_STREAMS (int, 0 = BAGUA_NET_STREAMS): with adaptive
  // streams, connections open this many streams, so the count may grow past
  // BAGUA_NET_STREAMS where windows cannot cover the bandwidth-delay product
  // (it starts at BAGUA_NET_STREAMS). Not a default: on hosts where the
  // receiver's CPU is the limit, window-limited streams look the same and
  // extra streams only cost (measured on 2-CPU loopback). Range 0..64.
  int maxStreams = 0;

  // NCCL_SOCKET_IFNAME (NCCL's): which interfaces become devices: a comma
  // list of prefixes, `^` excludes, `=` matches exactly (e.g. "=lo").
  std::string socketIfname;

  // NCCL_SOCKET_FAMILY (NCCL's): AF_INET or AF_INET6 restricts addresses to
  // one family; unset takes either.
  std::string socketFamily;
};

// The process's knobs, read from the environment on first use. Throws
// NetError naming the knob and the expected form when a value is malformed.
const Params& params();

// How many streams a connection opens: BAGUA_NET_STREAMS, or
// BAGUA_NET_MAX_STREAMS when that is larger and streams adapt.
int streamsToOpen(const Params& p);

// Names of every knob above, for logging and the docs check.
const std::vector<std::string>& paramNames();

// Logs (INIT|NET) each knob whose value differs from its default.
void logParams();

// Parses a CPU list such as "0-3,8,10-11" into *out. Returns false when the
// text is malformed or names a CPU outside [0, 4096).
bool parseCpuList(const std::string& text, std::vector<int>* out);

// Parses "123", "64K", "4M", "1G" (binary multiples). Returns false when the
// text is not a non-negative size.
bool parseBytes(const std::string& text, size_t* out);

}  // namespace bagua::net
