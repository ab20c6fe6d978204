// Comm: failure state, test(), stream start and close.
#include "net_plugin/transport/comm.h"

#include <chrono>

#include "net_plugin/base/hop_trace.h"
#include "net_plugin/base/log.h"
#include "net_plugin/base/steady_ns.h"
#include "net_plugin/engine/caller_wait.h"
#include "net_plugin/transport/stream.h"

namespace bagua::net {
namespace {

// A stream whose worker never answers within this time is leaked, not freed
// under the worker's feet. Shutdown makes this practically unreachable.
constexpr auto kCloseTimeout = std::chrono::seconds(30);

// Polls of the caller engine closer together than this find little new.
constexpr int64_t kCallerPollIntervalNs = 1000;

// Every caller stream of the process belongs to one caller-driven engine, so
// that one epoll_wait looks at all of them: NCCL's proxy tests each request
// in flight in turn, and a poll per comm made its loop slow.
std::shared_ptr<Engine> sharedCallerEngine() {
  static std::mutex mutex;
  static std::weak_ptr<Engine> current;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<Engine> engine = current.lock();
  if (!engine) {
    EngineConfig config;
    config.kind = EngineKind::kInline;
    engine = createEpollEngine(config);
    current = engine;
  }
  return engine;
}

std::atomic<int64_t> lastCallerPollNs{0};

}  // namespace

Comm::Comm(Kind kind, std::string peer, std::shared_ptr<Engine> engine)
    : engine_(std::move(engine)), kind_(kind), peer_(std::move(peer)) {}

Comm::~Comm() = default;

Worker& nextWorker(Engine& engine) {
  static std::atomic<unsigned> next{0};
  unsigned index = next.fetch_add(1, std::memory_order_relaxed);
  return engine.worker(static_cast<int>(index % static_cast<unsigned>(engine.workerCount())));
}

void Comm::setTraceConn(int firstFd) {
  if (hoptrace::on()) traceConn_ = hoptrace::connectionId(firstFd, kind_ == Kind::kSend);
}

void Comm::startStreams(std::vector<std::unique_ptr<Stream>> streams) {
  streams_ = std::move(streams);
  for (auto& stream : streams_) {
    Stream* s = stream.get();
    s->worker().post([s] { s->start(); });
  }
}

Worker* Comm::openCallerEngine() {
  callerEngine_ = sharedCallerEngine();
  return &callerEngine_->worker(0);
}

void Comm::callerProgress(bool throttled) {
  if (!callerEngine_) return;
  int64_t now = steadyNs();
  if (throttled && now - lastCallerPollNs.load(std::memory_order_relaxed) < kCallerPollIntervalNs) {
    return;
  }
  lastCallerPollNs.store(now, std::memory_order_relaxed);
  hoptrace::record(hoptrace::Event::kPoll, 0, 0, 0);
  callerEngine_->progress();
}

Status Comm::test(Request* req, int* done, int* size) {
  // A caller-driven engine, and the caller stream, move the bytes here, in
  // the caller's poll.
  ++req->tests;
  if (!req->done.load(std::memory_order_acquire)) {
    engine_->progress();
    if (callerEngine_ && mayUseCallerStream(req)) callerProgress(/*throttled=*/true);
  }
  if (req->done.load(std::memory_order_acquire)) {
    *done = 1;
    size_t bytes = req->kind == RequestKind::kRecv ? req->msgSize : req->size;
    hoptrace::record(req->kind == RequestKind::kRecv ? hoptrace::Event::kDone
                                                     : hoptrace::Event::kSent,
                     traceConn_, req->seq, bytes, req->tests);
    if (size != nullptr) {
      // NCCL's sizes are int even where messages are size_t.
      *size = bytes > static_cast<size_t>(INT32_MAX) ? INT32_MAX : static_cast<int>(bytes);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    releaseLocked(req);
    return Status::kOk;
  }
  *done = 0;
  Status failure = failure_.load(std::memory_order_acquire);
  if (failure != Status::kOk) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failureLogged_) {
      failureLogged_ = true;
      BAGUA_WARN("%s connection with %s failed (%s): %s", kind_ == Kind::kSend ? "send" : "receive",
                 peer_.c_str(), statusName(failure), failureMessage_.c_str());
    }
  }
  return failure;
}

void Comm::fail(Status status, const std::string& message, bool quiet) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.load(std::memory_order_relaxed) != Status::kOk) return;
  failureMessage_ = message;
  failure_.store(status, std::memory_order_release);
  if (quiet && !busyLocked()) return;
  failureLogged_ = true;
  BAGUA_WARN("%s connection with %s failed (%s): %s", kind_ == Kind::kSend ? "send" : "receive",
             peer_.c_str(), statusName(status), message.c_str());
}

void Comm::streamClosed() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++closedStreams_;
  closedCv_.notify_all();
}

bool Comm::close() {
  // What the callers' wait for a CPU looked like, once per process (the
  // first comm closed, after the job's collectives).
  static std::atomic<bool> waitLogged{false};
  if (std::string wait = describeCallerWait(); !wait.empty() && !waitLogged.exchange(true)) {
    BAGUA_INFO(NCCL_NET, "%s", wait.c_str());
  }
  for (auto& stream : streams_) {
    Stream* s = stream.get();
    s->worker().post([s] { s->beginClose(); });
  }
  auto allClosed = [this] { return closedStreams_ == streams_.size(); };
  bool finished = false;
  bool callerDriven = engine_->callerDriven() || callerEngine_ != nullptr;
  if (callerDriven) {
    // Nobody else may turn these engines: drive them until the streams let go.
    auto deadline = std::chrono::steady_clock::now() + kCloseTimeout;
    while (!finished && std::chrono::steady_clock::now() < deadline) {
      engine_->progress();
      callerProgress();
      std::unique_lock<std::mutex> lock(mutex_);
      finished = allClosed();
      if (finished) break;
      // Threads tell us through the condition variable; another caller may
      // be turning a caller-driven engine, so look again soon.
      closedCv_.wait_for(lock, std::chrono::microseconds(200), allClosed);
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (!callerDriven) finished = closedCv_.wait_for(lock, kCloseTimeout, allClosed);
  if (!finished) {
    BAGUA_WARN(
        "closing connection with %s: %zu of %zu streams did not stop within %lld s; "
        "leaking them",
        peer_.c_str(), streams_.size() - closedStreams_, streams_.size(),
        static_cast<long long>(kCloseTimeout.count()));
    for (auto& stream : streams_) (void)stream.release();
  }
  return finished;
}

}  // namespace bagua::net
