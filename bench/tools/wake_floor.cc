// wake_floor: what one small-message round trip costs through each kernel
// wake-up mechanism the plugin's engines use, without the plugin: the floor
// under bagua-net-perf's ping-pong for io_uring and epoll.
//
//   usage: wake_floor [--iters N] [--warmup N] [--size B] [--reps R]
//                     [--modes blocking,epoll,uring,uring-read,uring-plain]
//                     [--handoff]
//
// Two processes joined by one loopback TCP connection (TCP_NODELAY) bounce a
// message of --size bytes --iters times per repetition; the pinger prints the
// round trip's p50, p99 and mean in microseconds, median over the repetitions
// (each repetition is a fresh pair of processes, modes interleaved).
// Modes: blocking (recv/send), epoll (non-blocking socket, edge-triggered,
// wait only after EAGAIN, as epoll_engine.cc), uring (blocking socket, send
// and receive as SQEs, SINGLE_ISSUER|DEFER_TASKRUN as uring_engine.cc),
// uring-read (uring, but the I/O thread waits for the eventfd with one read
// SQE instead of a poll SQE and a read(2)), uring-plain (uring's ring
// without those flags).
// --handoff adds the plugin's thread hop on both sides: an I/O thread owns the
// socket, the caller thread hands it work through an eventfd (waited on by the
// same mechanism: epoll_wait, or an io_uring poll) and polls for completion
// with sched_yield, as NCCL's proxy polls test(). The mechanisms are in
// wake_io.{h,cc}.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/tools/wake_io.h"
#include "posix/child_process.h"

namespace {

using bagua::bench::fail;
using bagua::bench::Io;
using bagua::bench::makeIo;

struct Options {
  int iters = 20000;
  int warmup = 2000;
  size_t size = 8;
  int reps = 5;
  bool handoff = false;
  std::vector<std::string> modes = {"blocking", "epoll", "uring", "uring-read", "uring-plain"};
};

using Clock = std::chrono::steady_clock;

// One side's work per round trip: the pinger sends then receives, the echo
// receives then sends. With handoff, the I/O thread does the socket work and
// the calling thread hands over and waits, as NCCL's proxy and our workers.
class Side {
 public:
  // The Io is made on the thread that uses it (an io_uring ring with
  // SINGLE_ISSUER belongs to the thread that made it).
  Side(const std::string& mode, int fd, size_t size, int rounds, bool pinger, bool handoff)
      : buf_(size, 'x'), rounds_(rounds), pinger_(pinger), handoff_(handoff) {
    if (!handoff_) {
      io_ = makeIo(mode, fd);
      return;
    }
    thread_ = std::thread([this, mode, fd] {
      io_ = makeIo(mode, fd);
      efd_ = eventfd(0, EFD_CLOEXEC | (io_->blockingEvent() ? 0 : EFD_NONBLOCK));
      if (efd_ < 0) fail("eventfd");
      ready_.store(true, std::memory_order_release);
      ioLoop();
    });
    while (!ready_.load(std::memory_order_acquire)) sched_yield();
  }
  ~Side() {
    if (!handoff_) return;
    thread_.join();
    ::close(efd_);
    io_.reset();
  }
  // One round trip (the I/O thread, with handoff, exits after `rounds`).
  void roundTrip() {
    if (!handoff_) {
      if (pinger_) io_->sendAll(buf_.data(), buf_.size());
      io_->recvAll(buf_.data(), buf_.size());
      if (!pinger_) io_->sendAll(buf_.data(), buf_.size());
      return;
    }
    if (!pinger_) spinUntilDone();  // the I/O thread received
    uint64_t one = 1;
    if (::write(efd_, &one, sizeof(one)) != sizeof(one)) fail("write(eventfd)");
    if (pinger_) spinUntilDone();  // the reply arrived
  }

 private:
  void spinUntilDone() {
    while (!done_.exchange(false, std::memory_order_acq_rel)) sched_yield();
  }
  void ioLoop() {
    for (int i = 0; i < rounds_; ++i) {
      if (!pinger_) {
        io_->recvAll(buf_.data(), buf_.size());
        done_.store(true, std::memory_order_release);
      }
      io_->waitEvent(efd_);
      io_->sendAll(buf_.data(), buf_.size());
      if (pinger_) {
        io_->recvAll(buf_.data(), buf_.size());
        done_.store(true, std::memory_order_release);
      }
    }
  }
  std::unique_ptr<Io> io_;
  std::vector<char> buf_;
  int rounds_;
  bool pinger_;
  bool handoff_;
  int efd_ = -1;
  std::atomic<bool> ready_{false};  // io_ and efd_ exist
  std::atomic<bool> done_{false};
  std::thread thread_;
};

int connectedPair(int* childFd) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (lfd < 0 || bind(lfd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(lfd, 1) != 0 ||
      getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    fail("listen on 127.0.0.1");
  }
  int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (cfd < 0 || connect(cfd, reinterpret_cast<sockaddr*>(&addr), len) != 0) fail("connect");
  int afd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
  if (afd < 0) fail("accept");
  ::close(lfd);
  int one = 1;
  setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(afd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  *childFd = afd;
  return cfd;
}

struct Stats {
  double p50, p99, mean;
};

// Runs one repetition of `mode` in a fresh pair of processes.
Stats runOnce(const Options& o, const std::string& mode) {
  int childFd = -1;
  int fd = connectedPair(&childFd);
  int total = o.warmup + o.iters;
  bagua::posix::ChildProcess echo([&] {
    ::close(fd);
    Side side(mode, childFd, o.size, total, false, o.handoff);
    for (int i = 0; i < total; ++i) side.roundTrip();
    return 0;  // ~Side joins the I/O thread, which sends the last reply
  });
  ::close(childFd);
  std::vector<double> us;
  us.reserve(static_cast<size_t>(o.iters));
  {
    Side side(mode, fd, o.size, total, true, o.handoff);
    for (int i = 0; i < total; ++i) {
      Clock::time_point t0 = Clock::now();
      side.roundTrip();
      if (i >= o.warmup) {
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    }
  }
  int code = echo.wait();
  ::close(fd);
  if (code != 0) fail("echo process " + echo.describeExit(), ECHILD);
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  return {us[us.size() / 2], us[us.size() * 99 / 100], sum / static_cast<double>(us.size())};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t comma; (comma = s.find(',', start)) != std::string::npos; start = comma + 1) {
    out.push_back(s.substr(start, comma - start));
  }
  out.push_back(s.substr(start));
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "wake_floor: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    auto positive = [&](const std::string& v) {
      long n = std::strtol(v.c_str(), nullptr, 10);
      if (n <= 0 || n > 100000000) {
        std::fprintf(stderr, "wake_floor: %s wants a positive count, got '%s'\n", a.c_str(),
                     v.c_str());
        std::exit(2);
      }
      return static_cast<int>(n);
    };
    if (a == "--iters") {
      o.iters = positive(value());
    } else if (a == "--warmup") {
      o.warmup = positive(value());
    } else if (a == "--size") {
      o.size = static_cast<size_t>(positive(value()));
    } else if (a == "--reps") {
      o.reps = positive(value());
    } else if (a == "--modes") {
      o.modes = splitComma(value());
    } else if (a == "--handoff") {
      o.handoff = true;
    } else {
      std::fprintf(stderr,
                   "usage: wake_floor [--iters N] [--warmup N] [--size B] [--reps R]\n"
                   "                  [--modes blocking,epoll,uring,uring-read,uring-plain]\n"
                   "                  [--handoff]\n");
      std::exit(2);
    }
  }
  for (const std::string& m : o.modes) {
    if (m != "blocking" && m != "epoll" && m != "uring" && m != "uring-read" &&
        m != "uring-plain") {
      std::fprintf(stderr, "wake_floor: unknown mode '%s'\n", m.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  std::vector<std::vector<Stats>> runs(o.modes.size());
  for (int r = 0; r < o.reps; ++r) {
    for (size_t m = 0; m < o.modes.size(); ++m) runs[m].push_back(runOnce(o, o.modes[m]));
  }
  std::printf(
      "# %zu B round trips over loopback TCP, %d timed + %d warm-up, %s, median of %d reps\n",
      o.size, o.iters, o.warmup, o.handoff ? "with the thread hand-off" : "one thread", o.reps);
  std::printf("%-12s %8s %8s %8s   (p50 min-max)\n", "mode", "p50 us", "p99 us", "mean us");
  for (size_t m = 0; m < o.modes.size(); ++m) {
    std::vector<double> p50, p99, mean;
    for (const Stats& s : runs[m]) {
      p50.push_back(s.p50);
      p99.push_back(s.p99);
      mean.push_back(s.mean);
    }
    std::printf("%-12s %8.2f %8.2f %8.2f   (%.2f-%.2f)\n", o.modes[m].c_str(), median(p50),
                median(p99), median(mean), *std::min_element(p50.begin(), p50.end()),
                *std::max_element(p50.begin(), p50.end()));
  }
  return 0;
}
