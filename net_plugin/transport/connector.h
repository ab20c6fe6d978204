// The connecting side of setup (NCCL's connect), as a state machine that
// never blocks: each progress() call advances every stream as far as it can
// without waiting and returns the SendComm once all streams are connected
// and have sent their hello.
//
// Per stream: kConnecting (non-blocking connect in flight) -> kHello (hello
// partly written) -> kReady. A refused or unreachable listener is retried
// with growing back-off until connectTimeoutMs, then progress() throws.
#pragma once

#include <cstdint>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "net_plugin/base/socket_util.h"
#include "net_plugin/transport/send_comm.h"
#include "net_plugin/transport/wire.h"

namespace bagua::net {

class Connector {
 public:
  // Opens `nStreams` streams (1..handle.nStreams), of which the comm it
  // makes starts sending on `initialStreams` (adaptive streams move it from
  // there), and with `caller.open` one more, the caller stream; `limiter` (may be NULL) caps the comm's send rate. The connect
  // and the comm run with `params` (copied) on the engine `engines` gives.
  Connector(const ListenHandle& handle, int nStreams, int initialStreams, CallerStreamUse caller,
            std::shared_ptr<RateLimiter> limiter, const Params& params, EngineSource engines);

  using Clock = std::chrono::steady_clock;

  // Returns the comm when every stream is ready, else nullptr. Throws
  // NetError on a fatal error or when the connect timeout passes.
  std::unique_ptr<SendComm> progress();

  // After this (BAGUA_NET_CONNECT_TIMEOUT_MS), progress() fails unless every
  // stream is already connected and has sent its hello.
  Clock::time_point deadline() const { return deadline_; }
  // "address:port" of the listener it connects to.
  std::string peer() const;

 private:
  enum class State { kIdle, kConnecting, kHello, kReady };
  struct Conn {
    State state = State::kIdle;
    Fd fd;
    Hello hello{};
    size_t sent = 0;
    int attempts = 0;
    Clock::time_point retryAt{};
    int lastError = 0;
  };

  void advance(Conn& conn);
  void startAttempt(Conn& conn);
  void checkConnected(Conn& conn);
  void writeHello(Conn& conn);
  void scheduleRetry(Conn& conn, int err);

  ListenHandle handle_;
  std::shared_ptr<RateLimiter> limiter_;
  const Params params_;
  const int initialStreams_;
  const CallerStreamUse caller_;
  EngineSource engines_;
  uint64_t connId_;
  std::vector<Conn> conns_;
  Clock::time_point deadline_;
};

}  // namespace bagua::net
