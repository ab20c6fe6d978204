// The I/O engine: a fixed pool of worker threads shared by every connection
// of the process. Each TCP stream belongs to one worker, and all of a
// stream's I/O is started and completed on that worker's thread, so stream
// state needs no lock. Two implementations share this interface: io_uring
// (uring_engine.cc, one ring per worker) and epoll (epoll_engine.cc, for
// containers whose seccomp profile blocks io_uring). The epoll engine also
// runs without threads (EngineKind::kInline): its one worker's loop then
// turns only inside progress(), called by the comms from the caller's
// isend/irecv/test/close, one caller at a time, which stands in for "the
// worker's thread" below.
//
// Completion semantics are the same for both: at most one send and one
// receive are pending per fd; each finishes exactly once with the bytes moved
// (possibly fewer than asked; the caller continues) or -errno; a receive that
// returns 0 means the peer closed. After cancel(fd) pending operations finish
// promptly with an error.
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net_plugin/base/params.h"

namespace bagua::net {

// Gets the completions of one fd's operations, on the fd's worker thread.
class IoHandler {
 public:
  virtual ~IoHandler() = default;
  // A send finished: bytes written (> 0) or -errno.
  virtual void onSendDone(int result) = 0;
  // A receive finished: bytes read (> 0), 0 when the peer closed, or -errno.
  virtual void onRecvDone(int result) = 0;
  // A delay started with Worker::wakeAfter has passed.
  virtual void onTimer() {}
  // A zero-copy send (Worker::sendZeroCopy) finished: bytes written (> 0) or
  // -errno. When notifyFollows, the kernel still holds the buffers and
  // onZeroCopyNotify() follows once it lets go of them.
  virtual void onZeroCopySent(int /*result*/, bool /*notifyFollows*/) {}
  // The kernel released a zero-copy send's buffers; `copied` when it had
  // copied the data after all (loopback, veth, or a NIC without SG support).
  virtual void onZeroCopyNotify(bool /*copied*/) {}
};

// One worker thread. post() is thread-safe; every other method must be called
// on the worker's own thread (from a posted task or a completion; for a
// caller-driven engine, from inside Engine::progress()).
class Worker {
 public:
  virtual ~Worker() = default;
  // Runs `task` on this worker's thread soon.
  virtual void post(std::function<void()> task) = 0;
  // Starts delivering completions of operations on `fd` to `handler`; 0, or
  // -errno when the fd cannot be watched (epoll_ctl: ENOSPC past
  // fs.epoll.max_user_watches; fcntl: EBADF): nothing is then registered.
  [[nodiscard]] virtual int attach(int fd, IoHandler* handler) = 0;
  // Forgets `fd`; no operation may be pending on it.
  virtual void detach(int fd) = 0;
  // Starts sending `iov` (the array and its buffers must live until done).
  virtual void send(int fd, const iovec* iov, int iovcnt) = 0;
  // True when sendZeroCopy() is available (io_uring engine, Linux 6.1+).
  virtual bool zeroCopySupported() const { return false; }
  // Starts a zero-copy send of `iov` on `fd`, reporting to `completion`
  // (not to the fd's handler) through onZeroCopySent/onZeroCopyNotify, so
  // every send in flight can have its own handler. The buffers must stay
  // untouched until the notification. Only if zeroCopySupported().
  virtual void sendZeroCopy(int /*fd*/, const iovec* /*iov*/, int /*iovcnt*/,
                            IoHandler* /*completion*/) {}
  // Starts receiving into the buffers of `iov`, filled in order, up to their
  // total size (the array and its buffers must live until done).
  virtual void recv(int fd, const iovec* iov, int iovcnt) = 0;
  // recv() on a socket whose previous receive came back short: its queue
  // was empty then, so any bytes (or end of stream) since bring a new edge.
  // A caller-driven engine does not try it now but at that edge (nginx's
  // rule): on the caller's thread every syscall between a message's last
  // byte and test()'s answer is latency, and one that meets EAGAIN after
  // every message delays the next stream's read. Threaded engines start it
  // at once.
  virtual void recvAfterDrain(int fd, const iovec* iov, int iovcnt) { recv(fd, iov, iovcnt); }
  // Makes any pending operation on `fd` finish soon.
  virtual void cancel(int fd) = 0;
  // Calls the fd's handler's onTimer() after `delay` (at most one per fd).
  virtual void wakeAfter(int fd, std::chrono::nanoseconds delay) = 0;

  // A message of at most kSpinMessageBytes finished on this worker (the
  // streams call it, on the worker's thread). Workers spin (spinUs) only
  // after a round that finished one: back-to-back small messages then pay no
  // thread wake-up, while bulk transfers, whose kernel copies need the CPUs,
  // sleep between completions (4 ranks on 16 CPUs, 16-256 MiB: 4-39% more
  // busbw than spinning after every completion).
  void smallMessageDone() { spinEarned_ = true; }

 protected:
  // True if a small message finished since the last call.
  bool takeSpinEarned() { return std::exchange(spinEarned_, false); }

 private:
  bool spinEarned_ = false;
};

// Messages up to this size earn their worker a spin (Worker::smallMessageDone).
inline constexpr size_t kSpinMessageBytes = 64 * 1024;

class Engine {
 public:
  // Stops and joins every worker thread.
  virtual ~Engine() = default;
  // "io_uring" or "epoll".
  virtual const char* name() const = 0;
  // Number of workers: threads, or 1 for a caller-driven engine.
  virtual int workerCount() const = 0;
  // Worker `index` in [0, workerCount()).
  virtual Worker& worker(int index) = 0;
  // True when the engine has no threads (kInline): its work runs only in
  // progress(), which whoever waits on it must call.
  virtual bool callerDriven() const { return false; }
  // Caller-driven engines: runs what is ready (posted tasks, due timers,
  // completions, sockets with data or room) once, without blocking, on the
  // calling thread; returns at once while another thread is doing so. Never
  // call it holding a lock a handler takes (a comm's mutex). No-op for
  // engines with threads.
  virtual void progress() {}
};

// What an engine starts with (the plugin state fills it from the knobs).
struct EngineConfig {
  EngineKind kind = EngineKind::kAuto;
  int threads = 1;  // worker threads (kInline: none; ignored)
  int spinUs = 0;   // microseconds a worker polls after a small message before it sleeps
  // BAGUA_NET_CPUS: worker i is pinned to cpus[i mod size]; empty: unpinned.
  std::vector<int> cpus;
  // io_uring: submission queue entries per worker (the completion queue has
  // twice as many); 0 is the default, 512. Tests shrink it to fill the rings.
  unsigned ringEntries = 0;
  // BAGUA_NET_SPIN_BACKOFF: a spin that loses its CPU holds the next ones
  // back (spin_governor.h); false: workers always spin.
  bool spinBackoff = true;
};

// Gives the engine a new comm runs on, starting one if none is running (the
// plugin state's engine(); tests may pass their own).
using EngineSource = std::function<std::shared_ptr<Engine>()>;

// Starts an engine as `config` says. kAuto tries io_uring and falls back to
// epoll, saying why in *note. Throws NetError when the kind asked for cannot
// start.
std::unique_ptr<Engine> createEngine(const EngineConfig& config, std::string* note);

// epoll with config.threads worker threads, or caller-driven with none when
// config.kind is kInline.
std::unique_ptr<Engine> createEpollEngine(const EngineConfig& config);

// The CPU worker `index` is pinned to: the (index mod n)-th of `cpus`, or -1
// (not pinned) when `cpus` is empty.
int workerCpu(int index, const std::vector<int>& cpus);
// Called by each worker thread as it starts: pins it to `cpu` (from
// workerCpu) unless that is -1, warning once if the CPU is not allowed.
void pinWorkerThread(int index, int cpu);
// Called by a worker whose spin just lost its CPU (spin_governor.h): the
// first time in the process, one INFO line says so.
class SpinGovernor;
void noteLostSpin(int index, const SpinGovernor& governor);
// Whether a worker of this process lost its CPU while spinning within the
// last kMostBackoff: the host's CPUs are busy, and a small message is better
// read by the caller (SendComm's caller stream) than by a worker that must
// be woken.
bool spinsLostRecently();
// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), for the governor.
std::chrono::steady_clock::duration threadCpuTime();
// Throws NetError naming the io_uring error (e.g. EPERM under seccomp).
std::unique_ptr<Engine> createUringEngine(const EngineConfig& config);

}  // namespace bagua::net
