// epoll engine: the fallback where io_uring is unavailable (Docker's and
// containerd's default seccomp profiles block it) or BAGUA_NET_ENGINE=epoll.
//
// Sockets are non-blocking and registered once, edge-triggered, for both
// directions. An operation is tried at once when started; only after it
// meets EAGAIN does it wait for the next edge, which is why edge-triggering
// cannot miss a wake-up. Completions are queued and delivered from the loop,
// never from inside send()/recv(), so handlers that start the next
// operation do not recurse. Timers are a deadline map consulted by the loop;
// spinning polls with a zero timeout for spinUs after the last round that
// finished a small message (Worker::smallMessageDone), unless the spin
// governor holds it back (spin_governor.h).
//
// Inline (EngineKind::kInline): one worker and no thread. Each progress()
// turns the loop once with a zero timeout on the caller's thread, under a
// try-lock, so the caller's isend/irecv/test do the socket I/O themselves,
// as NCCL's socket transport does from its proxy thread when it has no
// helper threads. Where CPUs are as few as the callers that spin on test(),
// worker threads only compete with them for those CPUs. A receive started
// with recvAfterDrain() waits for the fd's next edge (unless the peer has
// closed or failed the socket, which brings no further edge): on the
// caller's thread every syscall between a message's last byte and test()'s
// answer is latency.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <thread>
#include <unordered_map>
#include <vector>

#include "net_plugin/base/log.h"
#include "net_plugin/base/socket_util.h"
#include "net_plugin/base/status.h"
#include "net_plugin/engine/caller_wait.h"
#include "net_plugin/engine/engine.h"
#include "net_plugin/engine/spin_governor.h"
#include "net_plugin/engine/task_queue.h"

namespace bagua::net {
namespace {

struct FdState {
  IoHandler* handler = nullptr;
  const iovec* sendIov = nullptr;  // pending send, when not null
  int sendIovcnt = 0;
  const iovec* recvIov = nullptr;  // pending receive, when not null
  int recvIovcnt = 0;
  bool hangup = false;  // an edge said EOF, a reset or an error: no later edge will
};

class EpollWorker final : public Worker {
 public:
  // With `threaded` false the worker has no thread: progress() turns its loop.
  EpollWorker(int index, int spinUs, bool spinBackoff, int cpu, bool threaded)
      : index_(index),
        spin_(std::chrono::microseconds(spinUs)),
        governor_(spinBackoff),
        threaded_(threaded),
        tasks_(threaded) {
    epollFd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epollFd_ < 0) throw NetError(Status::kSystemError, errnoMessage("epoll_create1", errno));
    if (!threaded_) return;  // nobody sleeps in epoll_wait: no wake-up fd needed
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = tasks_.wakeFd();
    if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, tasks_.wakeFd(), &ev) != 0) {
      int err = errno;
      ::close(epollFd_);
      throw NetError(Status::kSystemError, errnoMessage("epoll_ctl(eventfd)", err));
    }
    // Pinned (BAGUA_NET_CPUS) before we return, as the io_uring engine's
    // workers are, so a caller never sees an engine whose threads still run
    // anywhere; named here so the name is visible at once too.
    std::promise<void> pinned;
    std::future<void> ready = pinned.get_future();
    thread_ = std::thread([this, &pinned, cpu] {
      pinWorkerThread(index_, cpu);
      pinned.set_value();
      run();
    });
    pthread_setname_np(thread_.native_handle(), ("bagua-net-" + std::to_string(index_)).c_str());
    ready.wait();
  }

  ~EpollWorker() override {
    if (threaded_) {
      tasks_.requestStop();
      thread_.join();
    } else {
      runReady();  // tasks posted after the last progress() (detached streams only)
    }
    ::close(epollFd_);
  }

  // Caller-driven: one turn of the loop, unless another thread is in one.
  void progress() {
    std::unique_lock<std::mutex> turn(turnMutex_, std::try_to_lock);
    if (!turn.owns_lock()) return;
    runReady();
    handleReady(0);
  }

  void post(std::function<void()> task) override { tasks_.post(std::move(task)); }

  int attach(int fd, IoHandler* handler) override {
    if (int err = setNonBlocking(fd, true); err != 0) return -err;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
    ev.data.fd = fd;
    // ENOSPC past fs.epoll.max_user_watches; EPERM for what epoll cannot
    // watch (a regular file).
    if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev) != 0) return -errno;
    fds_[fd].handler = handler;
    return 0;
  }

  void detach(int fd) override {
    epoll_ctl(epollFd_, EPOLL_CTL_DEL, fd, nullptr);
    fds_.erase(fd);
    for (auto it = timers_.begin(); it != timers_.end();) {
      it = it->second == fd ? timers_.erase(it) : std::next(it);
    }
  }

  void wakeAfter(int fd, std::chrono::nanoseconds delay) override {
    timers_.emplace(Clock::now() + delay, fd);
  }

  void send(int fd, const iovec* iov, int iovcnt) override {
    FdState& st = fds_.at(fd);
    st.sendIov = iov;
    st.sendIovcnt = iovcnt;
    trySend(fd, st);
  }

  void recv(int fd, const iovec* iov, int iovcnt) override { tryRecv(fd, armRecv(fd, iov, iovcnt)); }

  void recvAfterDrain(int fd, const iovec* iov, int iovcnt) override {
    FdState& st = armRecv(fd, iov, iovcnt);
    if (threaded_ || st.hangup) tryRecv(fd, st);
  }

  void cancel(int fd) override {
    FdState& st = fds_.at(fd);
    if (st.sendIov != nullptr) complete(st, &st.sendIov, true, -ECANCELED);
    if (st.recvIov != nullptr) complete(st, &st.recvIov, false, -ECANCELED);
    // The fd's timer fires at the next turn, not when due.
    for (auto it = timers_.begin(); it != timers_.end(); ++it) {
      if (it->second == fd) {
        timers_.erase(it);
        timers_.emplace(Clock::now(), fd);
        break;  // at most one per fd (Worker::wakeAfter)
      }
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Completion {
    IoHandler* handler;
    bool isSend;
    int result;
  };

  // Fires due timers; returns how many.
  int fireTimers() {
    int fired = 0;
    Clock::time_point now = Clock::now();
    while (!timers_.empty() && timers_.begin()->first <= now) {
      int fd = timers_.begin()->second;
      timers_.erase(timers_.begin());
      auto it = fds_.find(fd);
      if (it != fds_.end()) it->second.handler->onTimer();
      ++fired;
    }
    return fired;
  }

  // epoll_wait timeout: 0 while spinning, up to the next timer, else forever.
  int waitTimeoutMs(bool spinning) {
    if (spinning) return 0;
    if (timers_.empty()) return -1;
    Clock::time_point now = Clock::now();
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(timers_.begin()->first - now);
    return static_cast<int>(std::max<long long>(0, left.count() + 1));
  }

  // Makes `iov` the fd's pending receive.
  FdState& armRecv(int fd, const iovec* iov, int iovcnt) {
    FdState& st = fds_.at(fd);
    st.recvIov = iov;
    st.recvIovcnt = iovcnt;
    return st;
  }

  // Ends the operation whose iovec pointer is *pending.
  void complete(FdState& st, const iovec** pending, bool isSend, int result) {
    *pending = nullptr;
    done_.push_back({st.handler, isSend, result});
  }

  void trySend(int fd, FdState& st) {
    msghdr msg = messageOf(st.sendIov, st.sendIovcnt);
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    complete(st, &st.sendIov, true, n < 0 ? -errno : static_cast<int>(n));
  }

  void tryRecv(int fd, FdState& st) {
    ssize_t n = 0;
    if (st.recvIovcnt == 1) {
      n = ::recv(fd, st.recvIov[0].iov_base, st.recvIov[0].iov_len, MSG_DONTWAIT);
    } else {
      msghdr msg = messageOf(st.recvIov, st.recvIovcnt);
      n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    complete(st, &st.recvIov, false, n < 0 ? -errno : static_cast<int>(n));
  }

  void deliver() {
    // Handlers start new operations, which may append to done_.
    while (!done_.empty()) {
      std::vector<Completion> batch;
      batch.swap(done_);
      for (const Completion& c : batch) {
        if (c.isSend) {
          c.handler->onSendDone(c.result);
        } else {
          c.handler->onRecvDone(c.result);
        }
      }
    }
  }

  // Runs posted tasks and due timers and delivers completions.
  void runReady() {
    tasks_.runAll();
    fireTimers();
    deliver();
  }

  // Waits up to timeoutMs for ready fds, retries their pending operations
  // and delivers what finished.
  void handleReady(int timeoutMs) {
    constexpr int kMaxEvents = 64;
    epoll_event events[kMaxEvents];
    int n = epoll_wait(epollFd_, events, kMaxEvents, timeoutMs);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == tasks_.wakeFd()) {
        tasks_.clearWake();
        continue;
      }
      auto it = fds_.find(fd);
      if (it == fds_.end()) continue;
      FdState& st = it->second;
      if ((events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) st.hangup = true;
      if (st.sendIov != nullptr) trySend(fd, st);
      if (st.recvIov != nullptr) tryRecv(fd, st);
    }
    deliver();
  }

  // Spins (zero-timeout waits) until spin_ after the last round that
  // finished a small message; a spin that loses its CPU (spin_governor.h)
  // ends there, and the worker sleeps while the governor's back-off lasts.
  void run() {
    Clock::time_point lastActive = Clock::now();
    Clock::time_point lastPoll{};  // the previous spinning turn's, or none
    while (!(tasks_.stopRequested() && fds_.empty())) {
      runReady();
      if (tasks_.stopRequested() && fds_.empty()) break;
      Clock::time_point now = Clock::now();
      bool spinning =
          now < lastActive + spin_ && governor_.maySpin(now) && !callersWaitedRecently();
      if (spinning && lastPoll == Clock::time_point{}) governor_.spinStarted(now, threadCpuTime());
      if (spinning && lastPoll != Clock::time_point{} &&
          !governor_.polled(lastPoll, now, threadCpuTime)) {
        noteLostSpin(index_, governor_);
        spinning = false;
      }
      lastPoll = spinning ? now : Clock::time_point{};
      handleReady(waitTimeoutMs(spinning));
      if (takeSpinEarned()) lastActive = Clock::now();
    }
  }

  int index_;
  std::chrono::microseconds spin_;
  SpinGovernor governor_;
  bool threaded_;
  std::mutex turnMutex_;  // caller-driven: held by the thread turning the loop
  int epollFd_ = -1;
  TaskQueue tasks_;
  std::thread thread_;
  std::unordered_map<int, FdState> fds_;
  std::vector<Completion> done_;
  std::multimap<Clock::time_point, int> timers_;  // deadline -> fd
};

class EpollEngine final : public Engine {
 public:
  explicit EpollEngine(const EngineConfig& config) : inline_(config.kind == EngineKind::kInline) {
    if (inline_) {
      workers_.push_back(std::make_unique<EpollWorker>(0, 0, false, -1, false));
      return;
    }
    for (int i = 0; i < config.threads; ++i) {
      workers_.push_back(std::make_unique<EpollWorker>(i, config.spinUs, config.spinBackoff,
                                                       workerCpu(i, config.cpus), true));
    }
  }
  const char* name() const override { return inline_ ? "inline" : "epoll"; }
  int workerCount() const override { return static_cast<int>(workers_.size()); }
  Worker& worker(int index) override { return *workers_.at(static_cast<size_t>(index)); }
  bool callerDriven() const override { return inline_; }
  void progress() override {
    if (inline_) workers_.front()->progress();
  }

 private:
  bool inline_;
  std::vector<std::unique_ptr<EpollWorker>> workers_;
};

}  // namespace

std::unique_ptr<Engine> createEpollEngine(const EngineConfig& config) {
  return std::make_unique<EpollEngine>(config);
}

}  // namespace bagua::net
