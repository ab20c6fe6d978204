// io_uring engine: one ring per worker thread.
//
// Each worker thread creates its own ring (so IORING_SETUP_SINGLE_ISSUER and
// DEFER_TASKRUN apply: completions are processed only when the worker enters
// the kernel, with no cross-thread task work; both need Linux 6.1 and are
// dropped on older kernels). The loop drains posted tasks, then submits
// every new SQE and waits for at least one completion in a single
// io_uring_enter, so the sends and receives that completions start are
// batched into the next call.
//
// user_data layout: the IoHandler pointer (8-byte aligned) with the
// operation kind in its low 3 bits (kSend, kRecv, kTimer, kSendZc); kWake
// marks the eventfd poll, kIgnore the cancel requests whose completion needs
// no action.
//
// Zero-copy sends (SENDMSG_ZC) complete twice under the same user_data: the
// send itself (IORING_CQE_F_MORE when a notification follows), then a
// notification (IORING_CQE_F_NOTIF) once the kernel released the pages,
// whose result carries IORING_NOTIF_USAGE_ZC_COPIED when the kernel copied
// after all (IORING_SEND_ZC_REPORT_USAGE, Linux 6.2).
//
// Spinning: for spinUs after the last round that finished a small message
// (Worker::smallMessageDone), the loop polls (io_uring_get_events runs the
// deferred completions) instead of sleeping, so back-to-back small messages
// pay no thread wake-up; a spin that loses its CPU ends, and the governor
// holds the next ones back while the host stays busy (spin_governor.h).
// Sockets are switched to blocking mode on attach: io_uring returns -EAGAIN
// for O_NONBLOCK files instead of waiting for readiness.
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config.h"
#include "net_plugin/base/log.h"
#include "net_plugin/base/socket_util.h"
#include "net_plugin/base/status.h"
#include "net_plugin/engine/caller_wait.h"
#include "net_plugin/engine/engine.h"
#include "net_plugin/engine/spin_governor.h"
#include "net_plugin/engine/task_queue.h"

#if BAGUA_HAVE_LIBURING
#include <liburing.h>

namespace bagua::net {
namespace {

constexpr unsigned kRingEntries = 512;

enum OpKind : uintptr_t { kSend = 0, kRecv = 1, kWake = 2, kIgnore = 3, kTimer = 4, kSendZc = 5 };
constexpr uint64_t kKindMask = 7;

// From Linux 6.2's uapi, which liburing 2.3's header predates.
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

uint64_t encode(IoHandler* handler, OpKind kind) {
  return reinterpret_cast<uintptr_t>(handler) | kind;
}

// One completion, copied out of the ring.
struct Completion {
  uint64_t data;
  int res;
  unsigned flags;
};

class UringWorker final : public Worker {
 public:
  UringWorker(int index, int spinUs, bool spinBackoff, int cpu, unsigned ringEntries)
      : index_(index),
        cpu_(cpu),
        ringEntries_(ringEntries),
        spin_(std::chrono::microseconds(spinUs)),
        governor_(spinBackoff) {}
  ~UringWorker() override { stop(); }

  // Starts the thread and waits until its ring exists; throws on failure.
  void start() {
    std::promise<int> ready;
    std::future<int> result = ready.get_future();
    thread_ = std::thread([this, &ready] { run(&ready); });
    int err = result.get();
    if (err != 0) {
      thread_.join();
      throw NetError(Status::kSystemError, errnoMessage("io_uring_queue_init", err));
    }
  }

  void stop() {
    if (!thread_.joinable()) return;
    tasks_.requestStop();
    thread_.join();
  }

  void post(std::function<void()> task) override { tasks_.post(std::move(task)); }

  int attach(int fd, IoHandler* handler) override {
    if (int err = setNonBlocking(fd, false); err != 0) return -err;
    handlers_[fd] = handler;
    return 0;
  }

  void detach(int fd) override {
    handlers_.erase(fd);
    sendMsgs_.erase(fd);
    recvMsgs_.erase(fd);
    timers_.erase(fd);
  }

  void send(int fd, const iovec* iov, int iovcnt) override {
    io_uring_sqe* sqe = nextSqe();
    // MSG_WAITALL: when the socket buffer takes only part of a chunk, the
    // kernel waits for room and sends the rest itself (io_uring retries
    // stream sockets internally), so a chunk costs one completion instead of
    // one per short write. An error after partial progress still reports the
    // bytes sent; the next send reports the error.
    io_uring_prep_sendmsg(sqe, fd, messageFor(&sendMsgs_, fd, iov, iovcnt),
                          MSG_NOSIGNAL | MSG_WAITALL);
    io_uring_sqe_set_data64(sqe, encode(handlers_.at(fd), kSend));
  }

  bool zeroCopySupported() const override { return zeroCopy_; }

  void sendZeroCopy(int fd, const iovec* iov, int iovcnt, IoHandler* completion) override {
    io_uring_sqe* sqe = nextSqe();
    io_uring_prep_sendmsg_zc(sqe, fd, messageFor(&sendMsgs_, fd, iov, iovcnt), MSG_NOSIGNAL);
    sqe->ioprio |= IORING_SEND_ZC_REPORT_USAGE;
    io_uring_sqe_set_data64(sqe, encode(completion, kSendZc));
  }

  void recv(int fd, const iovec* iov, int iovcnt) override {
    io_uring_sqe* sqe = nextSqe();
    if (iovcnt == 1) {  // plain recv: no msghdr to copy in
      io_uring_prep_recv(sqe, fd, iov[0].iov_base, iov[0].iov_len, 0);
    } else {
      io_uring_prep_recvmsg(sqe, fd, messageFor(&recvMsgs_, fd, iov, iovcnt), 0);
    }
    io_uring_sqe_set_data64(sqe, encode(handlers_.at(fd), kRecv));
  }

  void cancel(int fd) override {
    io_uring_sqe* sqe = nextSqe();
    io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
    io_uring_sqe_set_data64(sqe, kIgnore);
    // A timeout has no fd to match: remove the fd's own, which then
    // completes (-ECANCELED) into its handler's onTimer() now, not when due.
    if (timers_.count(fd) != 0) {
      sqe = nextSqe();
      io_uring_prep_timeout_remove(sqe, encode(handlers_.at(fd), kTimer), 0);
      io_uring_sqe_set_data64(sqe, kIgnore);
    }
  }

  void wakeAfter(int fd, std::chrono::nanoseconds delay) override {
    __kernel_timespec& ts = timers_[fd];  // must outlive the pending timeout
    ts.tv_sec = delay.count() / 1000000000;
    ts.tv_nsec = delay.count() % 1000000000;
    io_uring_sqe* sqe = nextSqe();
    io_uring_prep_timeout(sqe, &ts, 0, 0);
    io_uring_sqe_set_data64(sqe, encode(handlers_.at(fd), kTimer));
  }

 private:
  int initRing() {
    io_uring_params p;
    std::memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN;
    int err = io_uring_queue_init_params(ringEntries_, &ring_, &p);
    if (err == -EINVAL) {  // kernel older than 6.1: plain ring
      std::memset(&p, 0, sizeof(p));
      err = io_uring_queue_init_params(ringEntries_, &ring_, &p);
    }
    if (err == 0) {
      if (io_uring_probe* probe = io_uring_get_probe_ring(&ring_)) {
        zeroCopy_ = io_uring_opcode_supported(probe, IORING_OP_SENDMSG_ZC) != 0;
        io_uring_free_probe(probe);
      }
    }
    return err;
  }

  void run(std::promise<int>* ready) {
    pthread_setname_np(pthread_self(), ("bagua-net-" + std::to_string(index_)).c_str());
    pinWorkerThread(index_, cpu_);
    int err = initRing();
    ready->set_value(err < 0 ? -err : 0);
    if (err < 0) return;
    armWake();
    auto lastActive = std::chrono::steady_clock::now();
    while (!(tasks_.stopRequested() && handlers_.empty())) {
      tasks_.runAll();
      if (tasks_.stopRequested() && handlers_.empty()) break;
      if (!backlog_.empty()) {
        io_uring_submit(&ring_);  // completions are waiting in backlog_: no sleep
      } else if (!spinUntil(lastActive + spin_)) {
        int rc = io_uring_submit_and_wait(&ring_, 1);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY && rc != -ETIME) {
          BAGUA_WARN("io_uring_submit_and_wait failed on worker %d: %s", index_, strerror(-rc));
        }
      }
      reap();
      if (takeSpinEarned()) lastActive = std::chrono::steady_clock::now();
    }
    io_uring_queue_exit(&ring_);
  }

  // Submits, then polls until a completion or a task arrives or `deadline`
  // passes. Returns true if there is something to process.
  // A spin that loses its CPU (spin_governor.h) ends there, and the worker
  // sleeps instead while the governor's back-off lasts.
  bool spinUntil(std::chrono::steady_clock::time_point deadline) {
    if (spin_.count() == 0) return false;
    auto last = std::chrono::steady_clock::now();
    if (last >= deadline || !governor_.maySpin(last) || callersWaitedRecently()) return false;
    governor_.spinStarted(last, threadCpuTime());
    io_uring_submit(&ring_);
    do {
      if (io_uring_cq_ready(&ring_) > 0 || tasks_.pending()) return true;
      io_uring_get_events(&ring_);
      auto now = std::chrono::steady_clock::now();
      if (!governor_.polled(last, now, threadCpuTime)) {
        noteLostSpin(index_, governor_);
        return io_uring_cq_ready(&ring_) > 0 || tasks_.pending();
      }
      last = now;
    } while (last < deadline);
    return io_uring_cq_ready(&ring_) > 0 || tasks_.pending();
  }

  // Copies a batch of completions out and frees their CQ slots before
  // dispatching, since handlers submit new operations.
  void reap() {
    while (!backlog_.empty()) {  // stashed by nextSqe(), older than the queue's
      std::vector<Completion> stashed;
      stashed.swap(backlog_);
      for (const Completion& c : stashed) dispatch(c);
    }
    constexpr unsigned kBatch = 64;
    unsigned n = 0;
    do {
      io_uring_cqe* cqes[kBatch];
      n = io_uring_peek_batch_cqe(&ring_, cqes, kBatch);
      Completion done[kBatch];
      for (unsigned i = 0; i < n; ++i) {
        done[i] = {io_uring_cqe_get_data64(cqes[i]), cqes[i]->res, cqes[i]->flags};
      }
      io_uring_cq_advance(&ring_, n);
      for (unsigned i = 0; i < n; ++i) dispatch(done[i]);
    } while (n == kBatch || !backlog_.empty());
  }

  void dispatch(const Completion& c) {
    auto kind = static_cast<OpKind>(c.data & kKindMask);
    auto* handler = reinterpret_cast<IoHandler*>(c.data & ~kKindMask);
    int res = c.res;
    unsigned flags = c.flags;
    switch (kind) {
      case kSendZc:
        if ((flags & IORING_CQE_F_NOTIF) != 0) {
          handler->onZeroCopyNotify((static_cast<unsigned>(res) & IORING_NOTIF_USAGE_ZC_COPIED) !=
                                    0);
        } else {
          handler->onZeroCopySent(res, (flags & IORING_CQE_F_MORE) != 0);
        }
        break;
      case kSend:
        handler->onSendDone(res);
        break;
      case kRecv:
        handler->onRecvDone(res);
        break;
      case kTimer:
        handler->onTimer();
        break;
      case kWake:
        tasks_.clearWake();
        armWake();
        break;
      case kIgnore:
        break;
    }
  }

  void armWake() {
    io_uring_sqe* sqe = nextSqe();
    io_uring_prep_poll_add(sqe, tasks_.wakeFd(), POLLIN);
    io_uring_sqe_set_data64(sqe, kWake);
  }

  // The fd's msghdr in `msgs` for a sendmsg or recvmsg of `iov` (it must
  // outlive the pending operation; at most one of each is pending per fd).
  static msghdr* messageFor(std::unordered_map<int, msghdr>* msgs, int fd, const iovec* iov,
                            int iovcnt) {
    msghdr& msg = (*msgs)[fd];
    msg = messageOf(iov, iovcnt);
    return &msg;
  }

  // An SQE, submitting queued ones first when the submission queue is full.
  // A free submission entry. With the queue full it submits; a kernel that
  // refuses while completions overflow (EBUSY, Linux before 5.19 or so) or
  // lacks memory (EAGAIN) gets the completion queue emptied into backlog_,
  // which reap() dispatches: not from here, since the handler asking for an
  // entry may be in the middle of updating its state.
  io_uring_sqe* nextSqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    while (sqe == nullptr) {
      int rc = io_uring_submit(&ring_);
      if (rc == -EBUSY || rc == -EAGAIN) {
        io_uring_get_events(&ring_);  // moves overflowed completions into the queue
        if (stashCompletions() == 0) std::this_thread::yield();
      }
      sqe = io_uring_get_sqe(&ring_);
    }
    return sqe;
  }

  // Copies every completion in the queue to backlog_ and frees its slots.
  unsigned stashCompletions() {
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0;
    unsigned n = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      backlog_.push_back({io_uring_cqe_get_data64(cqe), cqe->res, cqe->flags});
      ++n;
    }
    io_uring_cq_advance(&ring_, n);
    return n;
  }

  int index_;
  int cpu_;  // pinned to (BAGUA_NET_CPUS), or -1
  unsigned ringEntries_;
  std::chrono::microseconds spin_;
  SpinGovernor governor_;
  bool zeroCopy_ = false;  // the kernel has SENDMSG_ZC
  io_uring ring_{};
  TaskQueue tasks_;
  std::thread thread_;
  std::unordered_map<int, IoHandler*> handlers_;
  std::unordered_map<int, msghdr> sendMsgs_;           // must outlive each pending sendmsg
  std::unordered_map<int, msghdr> recvMsgs_;           // must outlive each pending recvmsg
  std::unordered_map<int, __kernel_timespec> timers_;  // must outlive each pending timeout
  std::vector<Completion> backlog_;  // completions nextSqe() took off a full queue
};

class UringEngine final : public Engine {
 public:
  explicit UringEngine(const EngineConfig& config) {
    for (int i = 0; i < config.threads; ++i) {
      workers_.push_back(std::make_unique<UringWorker>(
          i, config.spinUs, config.spinBackoff, workerCpu(i, config.cpus),
          config.ringEntries != 0 ? config.ringEntries : kRingEntries));
      workers_.back()->start();
    }
  }
  const char* name() const override { return "io_uring"; }
  int workerCount() const override { return static_cast<int>(workers_.size()); }
  Worker& worker(int index) override { return *workers_.at(static_cast<size_t>(index)); }

 private:
  std::vector<std::unique_ptr<UringWorker>> workers_;
};

}  // namespace

std::unique_ptr<Engine> createUringEngine(const EngineConfig& config) {
  return std::make_unique<UringEngine>(config);
}

}  // namespace bagua::net

#else  // !BAGUA_HAVE_LIBURING

namespace bagua::net {

std::unique_ptr<Engine> createUringEngine(const EngineConfig&) {
  throw NetError(Status::kSystemError, "this build has no io_uring engine (liburing not found)");
}

}  // namespace bagua::net

#endif
