// What send and receive comms share: identity checks at the ABI, failure
// state, test(), and the close protocol for their streams.
//
// A comm fails at most once (the first error wins and is logged once with
// the peer's address); from then on test() of every unfinished request
// returns that error, while requests that had finished still report done.
#pragma once

#include <cstdint>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net_plugin/base/status.h"
#include "net_plugin/engine/engine.h"
#include "net_plugin/transport/request.h"
#include "net_plugin/transport/stream_owner.h"

namespace bagua::net {

class Stream;

class Comm : public StreamOwner {
 public:
  enum class Kind : uint8_t { kSend, kRecv };

  Comm(Kind kind, std::string peer, std::shared_ptr<Engine> engine);
  ~Comm() override;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  Kind kind() const { return kind_; }
  // The connection's id in BAGUA_NET_TRACE's records (0 when off).
  uint32_t traceConn() const { return traceConn_; }
  const std::string& peer() const { return peer_; }
  // Data streams (the caller stream, if any, is not counted).
  size_t streamCount() const { return streams_.size() - (hasCallerStream() ? 1 : 0); }
  // True when the connection's last stream is its caller stream.
  bool hasCallerStream() const { return callerEngine_ != nullptr; }

  // test() of the ABI: *done = 1 and *size = bytes when finished (the request
  // is then released), the comm's failure when it failed, else *done = 0.
  Status test(Request* req, int* done, int* size);

  // Records the first failure and logs it. Thread-safe. A quiet failure
  // (the peer closing an idle connection: normal at teardown) is logged
  // only when test() first reports it for a request.
  void fail(Status status, const std::string& message, bool quiet = false);
  bool failed() const { return failure_.load(std::memory_order_acquire) != Status::kOk; }

  // Stops every stream (shutting sockets down if I/O is pending) and waits
  // until their workers have let go of them; the caller then deletes the
  // comm. Returns false if a worker did not answer in time: the comm must
  // then be leaked, since a worker may still touch it.
  bool close();

  // Called by a stream on its worker once it is detached and its fd closed.
  void streamClosed() override;
  // Called by a stream on its worker that cannot go on: fail(status, message).
  void streamFailed(Status status, const std::string& message) override { fail(status, message); }

 protected:
  // Sets traceConn() from the connection's first stream, when tracing.
  void setTraceConn(int firstFd);
  // Adds the comm's streams, spread over the engine's workers, and starts them.
  void startStreams(std::vector<std::unique_ptr<Stream>> streams);
  // Joins the process's caller engine (no thread: turned by
  // callerProgress()) and returns its worker, to which the caller stream
  // belongs.
  Worker* openCallerEngine();
  // Moves the bytes of every caller stream of the process (one epoll_wait),
  // on the calling thread, unless another thread is doing so; `throttled`
  // skips it when some caller did so within the last microsecond (test() is
  // polled in a loop over every request in flight). Never with mutex_ held.
  void callerProgress(bool throttled = false);
  // Whether `req`, unfinished, may be waiting on the caller stream (test()
  // then turns it).
  virtual bool mayUseCallerStream(const Request* req) const = 0;
  // Under mutex_: returns a finished request to the pool.
  virtual void releaseLocked(Request* req) = 0;
  // Under mutex_: true when any posted request still waits for bytes.
  virtual bool busyLocked() const = 0;

  std::mutex mutex_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::shared_ptr<Engine> engine_;
  // The process's caller-driven engine of caller streams (null without a
  // caller stream); let go of before the streams are destroyed.
  std::shared_ptr<Engine> callerEngine_;

 private:
  Kind kind_;
  uint32_t traceConn_ = 0;
  std::string peer_;
  std::atomic<Status> failure_{Status::kOk};
  std::string failureMessage_;  // (mutex)
  bool failureLogged_ = false;  // (mutex)
  std::condition_variable closedCv_;
  size_t closedStreams_ = 0;  // (mutex)
};

// Picks the worker for the next stream: round-robin over the process.
Worker& nextWorker(Engine& engine);

}  // namespace bagua::net
