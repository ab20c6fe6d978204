// link_emulator: a point-to-point link between two network namespaces with a
// one-way delay, a serialisation rate and a tail-drop queue, in user space
// because this kernel has no sch_netem (tc can shape a rate but not delay).
//
//   usage: link_emulator NS_A NS_B DELAY_US RATE_MBIT QUEUE_KB MTU
//                        [--ready-file F] [--spin-us N] [--realtime 0|1]
//
// It creates a TUN device named "bnlink" in each namespace (/var/run/netns/NS,
// as `ip netns add` makes them) with the given MTU and relays IP packets
// between the two. Each direction is a FIFO in front of a wire: a packet that
// finds more than QUEUE_KB still waiting to be serialised is dropped; otherwise
// it is serialised at RATE_MBIT (IP bytes; no link-layer overhead) once the
// packets before it are, and comes out DELAY_US after its last bit went in.
// The caller assigns addresses and sets the devices up. --ready-file F is
// written (with the pid) once both devices exist. SIGTERM or SIGINT prints
// per-direction counters and exits 0; the devices vanish with the process.
//
// Relies on: TUN with IFF_NO_PI (one read or write is one IP packet); a TUN
// device belongs to the namespace in which /dev/net/tun was opened, hence
// setns(2) around the open; hrtimers, ppoll's ns timeout and a 1 ns timer
// slack, so sleeping until a release time costs only the wake-up latency.
// --spin-us N polls instead of sleeping for the last N us (more accurate,
// but it burns a core). --realtime 1 runs both threads SCHED_FIFO where the
// kernel lets it (the GPU host's container does not: EPERM), so that no
// other thread on their CPUs delays a release (the queue model is the
// emulator's: a thread that is late to read lets the TUN device's ring fill,
// and the kernel drops what finds it full; the ring is kTunRingPackets long).
// One thread per direction (one thread for both carried
// 9.6 Gbit/s one way but 4.9 each way at once, and released packets 190-300 us
// late under all_reduce's two-way load: bench/results/slow_link_gpu_2026-11-28);
// packet buffers are recycled.
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

constexpr char kDeviceName[] = "bnlink";
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
// Packets read per device per wake-up, so that a busy direction cannot hold
// back the other one's releases for long.
constexpr int kReadBatch = 32;
// The TUN device's transmit ring (its txqueuelen; the kernel's default is 500
// packets, 3.6 ms at 10 Gbit/s with MTU 9000). A packet that finds it full is
// dropped by the kernel (the device's TX dropped), outside the queue this
// emulator models: a thread held up for a few ms (8-16 ms releases late were
// seen under all_reduce) then cost TCP a loss. Deep enough for 50 ms at line rate.
constexpr int kTunRingPackets = 100000;
// SCHED_FIFO priority of the direction threads with --realtime 1.
constexpr int kRealtimePriority = 50;

struct Config {
  std::string nsA, nsB, readyFile;
  int64_t delayNs = 0, rateMbit = 0, queueBytes = 0, spinNs = 0;
  int mtu = 0;
  bool realtime = false;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "link_emulator: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

int64_t nowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t parseInt(const char* name, const char* text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
    std::fprintf(stderr,
                 "link_emulator: %s='%s': expected an integer in [%" PRId64 ", %" PRId64 "]\n",
                 name, text, lo, hi);
    std::exit(2);
  }
  return v;
}

Config parseArgs(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr,
                 "usage: link_emulator NS_A NS_B DELAY_US RATE_MBIT QUEUE_KB MTU"
                 " [--ready-file F] [--spin-us N] [--realtime 0|1]\n");
    std::exit(2);
  }
  Config c;
  c.nsA = argv[1];
  c.nsB = argv[2];
  c.delayNs = parseInt("DELAY_US", argv[3], 0, 10 * 1000 * 1000) * 1000;
  c.rateMbit = parseInt("RATE_MBIT", argv[4], 1, 1000 * 1000);
  c.queueBytes = parseInt("QUEUE_KB", argv[5], 1, 1024 * 1024) * 1024;
  c.mtu = static_cast<int>(parseInt("MTU", argv[6], 576, 65535));
  for (int i = 7; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "link_emulator: %s needs a value\n", flag.c_str());
      std::exit(2);
    }
    if (flag == "--ready-file") {
      c.readyFile = argv[i + 1];
    } else if (flag == "--spin-us") {
      c.spinNs = parseInt("--spin-us", argv[i + 1], 0, 1000 * 1000) * 1000;
    } else if (flag == "--realtime") {
      c.realtime = parseInt("--realtime", argv[i + 1], 0, 1) == 1;
    } else {
      std::fprintf(stderr, "link_emulator: unknown option '%s'\n", flag.c_str());
      std::exit(2);
    }
  }
  return c;
}

// Creates kDeviceName in namespace `ns` with the given MTU; returns its fd.
int openTunIn(const std::string& ns, int mtu) {
  const std::string path = "/var/run/netns/" + ns;
  const int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  const int target = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (home < 0 || target < 0) fail("open " + path);
  if (setns(target, CLONE_NEWNET) != 0) fail("setns " + path);
  const int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("open /dev/net/tun in " + ns);
  ifreq ifr{};
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::memcpy(ifr.ifr_name, kDeviceName, sizeof(kDeviceName));
  if (ioctl(fd, TUNSETIFF, &ifr) != 0) fail(std::string("TUNSETIFF ") + kDeviceName + " in " + ns);
  // A socket's ioctls act on the namespace it was created in: this one.
  const int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifr.ifr_mtu = mtu;
  if (sock < 0 || ioctl(sock, SIOCSIFMTU, &ifr) != 0) fail("set MTU of the device in " + ns);
  ifr.ifr_qlen = kTunRingPackets;
  if (ioctl(sock, SIOCSIFTXQLEN, &ifr) != 0) fail("set txqueuelen of the device in " + ns);
  close(sock);
  if (setns(home, CLONE_NEWNET) != 0) fail("setns back");
  close(home);
  close(target);
  return fd;
}

// One direction of the link: a tail-drop FIFO in front of the serialiser,
// then a wire that holds every packet for the delay.
class Direction {
 public:
  Direction(const char* name, int in, int out, const Config& c)
      : name_(name), in_(in), out_(out), cfg_(c) {}

  // Reads up to kReadBatch packets from the input device and queues them.
  void receive() {
    for (int i = 0; i < kReadBatch; ++i) {
      std::vector<unsigned char> buf = takeBuffer();
      const ssize_t n = read(in_, buf.data(), buf.size());
      if (n <= 0) {
        spare_.push_back(std::move(buf));
        if (n < 0 && errno != EAGAIN && errno != EINTR) fail(std::string("read ") + name_);
        return;
      }
      const int64_t now = nowNs();
      const int64_t start = std::max(now, serialiserFreeNs_);
      // Bytes still waiting for the serialiser when this packet arrives.
      const int64_t backlog = (start - now) * cfg_.rateMbit / 8000;
      if (backlog + n > cfg_.queueBytes) {
        ++dropped_;
        spare_.push_back(std::move(buf));
        continue;
      }
      serialiserFreeNs_ = start + n * 8000 / cfg_.rateMbit;
      wire_.push_back({serialiserFreeNs_ + cfg_.delayNs, static_cast<size_t>(n), std::move(buf)});
      ++packets_;
      bytes_ += n;
      peakBacklog_ = std::max(peakBacklog_, backlog + n);
    }
  }

  // Writes every packet whose release time has come to the output device.
  void deliver(int64_t now) {
    while (!wire_.empty() && wire_.front().releaseNs <= now) {
      Packet& p = wire_.front();
      // A write the receiving stack refuses is a packet lost on the wire.
      if (write(out_, p.bytes.data(), p.len) != static_cast<ssize_t>(p.len)) ++writeErrors_;
      const int64_t late = now - p.releaseNs;
      lateSumNs_ += late;
      lateMaxNs_ = std::max(lateMaxNs_, late);
      ++delivered_;
      spare_.push_back(std::move(p.bytes));
      wire_.pop_front();
    }
  }

  // Release time of the oldest packet on the wire, kNever when it is empty.
  int64_t nextReleaseNs() const { return wire_.empty() ? kNever : wire_.front().releaseNs; }

  void printCounters() const {
    std::printf("%s: %" PRIu64 " packets (%" PRIu64 " bytes) in, %" PRIu64 " delivered, %" PRIu64
                " dropped (queue full), %" PRIu64 " write errors, peak queue %" PRId64
                " KB, release late by %.1f us mean, %.1f us max\n",
                name_, packets_, bytes_, delivered_, dropped_, writeErrors_, peakBacklog_ / 1024,
                delivered_ ? lateSumNs_ / 1e3 / static_cast<double>(delivered_) : 0.0,
                lateMaxNs_ / 1e3);
  }

 private:
  struct Packet {
    int64_t releaseNs;
    size_t len;
    std::vector<unsigned char> bytes;
  };

  std::vector<unsigned char> takeBuffer() {
    if (spare_.empty()) return std::vector<unsigned char>(cfg_.mtu);
    std::vector<unsigned char> b = std::move(spare_.back());
    spare_.pop_back();
    return b;
  }

  const char* name_;
  int in_, out_;
  const Config& cfg_;
  int64_t serialiserFreeNs_ = 0;  // when the last accepted packet's last bit is sent
  std::deque<Packet> wire_;       // accepted packets, in release order
  std::vector<std::vector<unsigned char>> spare_;
  uint64_t packets_ = 0, bytes_ = 0, delivered_ = 0, dropped_ = 0, writeErrors_ = 0;
  int64_t peakBacklog_ = 0, lateSumNs_ = 0, lateMaxNs_ = 0;
};

void writeReadyFile(const std::string& path) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) fail("create " + tmp);
  std::fprintf(f, "%d\n", static_cast<int>(getpid()));
  // rename makes the file appear complete, so a waiting script reads a whole pid.
  if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) fail("write " + path);
}

void printCpu(int64_t wallNs) {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  std::printf("cpu: %.2f s user+sys over %.2f s (%.0f%% of one core)\n", cpu, wallNs / 1e9,
              wallNs > 0 ? 100.0 * cpu * 1e9 / static_cast<double>(wallNs) : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  const Config cfg = parseArgs(argc, argv);
  // Timers fire within 1 ns of the release time instead of the default 50 us.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  // Blocked signals queue on a signalfd polled with the devices: a stop
  // request is seen at the next wake-up, never in the middle of a packet.
  if (sigprocmask(SIG_BLOCK, &stop, nullptr) != 0) fail("sigprocmask");
  const int sigFd = signalfd(-1, &stop, SFD_CLOEXEC);
  if (sigFd < 0) fail("signalfd");

  const int tunA = openTunIn(cfg.nsA, cfg.mtu);
  const int tunB = openTunIn(cfg.nsB, cfg.mtu);
  if (!cfg.readyFile.empty()) writeReadyFile(cfg.readyFile);
  Direction aToB("A->B", tunA, tunB, cfg);
  Direction bToA("B->A", tunB, tunA, cfg);
  // Written once to stop both directions' threads.
  const int stopFd = eventfd(0, EFD_CLOEXEC);
  if (stopFd < 0) fail("eventfd");
  std::atomic<int> status{0};
  auto stopAll = [stopFd] {
    const uint64_t one = 1;
    if (write(stopFd, &one, sizeof(one)) != sizeof(one)) fail("write eventfd");
  };
  auto run = [&](Direction* dir, int inFd) {
    if (cfg.realtime) {
      const sched_param param{kRealtimePriority};
      // Refused without CAP_SYS_NICE or where the cgroup has no realtime
      // budget (the GPU host's container): say so and go on as a normal thread.
      const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
      if (rc != 0) {
        std::fprintf(stderr, "link_emulator: --realtime 1: SCHED_FIFO refused (%s); normal priority\n",
                     std::strerror(rc));
      }
    }
    pollfd fds[2] = {{inFd, POLLIN, 0}, {stopFd, POLLIN, 0}};
    for (;;) {
      int64_t now = nowNs();
      dir->deliver(now);
      const int64_t next = dir->nextReleaseNs();
      timespec timeout{};
      timespec* timeoutPtr = nullptr;  // nothing on the wire: sleep until a packet arrives
      if (next != kNever) {
        now = nowNs();
        // With --spin-us, wake that much early and poll without sleeping until the release.
        const int64_t wait = std::max<int64_t>(0, next - now - cfg.spinNs);
        timeout.tv_sec = wait / 1000000000;
        timeout.tv_nsec = wait % 1000000000;
        timeoutPtr = &timeout;
      }
      if (ppoll(fds, 2, timeoutPtr, nullptr) < 0) {
        if (errno == EINTR) continue;
        fail("ppoll");
      }
      if (fds[1].revents & POLLIN) return;
      if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
        std::fprintf(stderr, "link_emulator: a TUN device went away (namespace deleted?)\n");
        status = 1;
        stopAll();
        return;
      }
      if (fds[0].revents & POLLIN) dir->receive();
    }
  };
  const int64_t startNs = nowNs();
  std::thread aThread(run, &aToB, tunA);
  std::thread bThread(run, &bToA, tunB);
  // A stop request, or a direction that failed (it writes stopFd).
  pollfd wait[2] = {{sigFd, POLLIN, 0}, {stopFd, POLLIN, 0}};
  while (ppoll(wait, 2, nullptr, nullptr) < 0) {
    if (errno != EINTR) fail("ppoll");
  }
  if (wait[0].revents & POLLIN) stopAll();
  aThread.join();
  bThread.join();
  aToB.printCounters();
  bToA.printCounters();
  printCpu(nowNs() - startNs);
  std::fflush(stdout);
  return status.load();
}
