// Connector: non-blocking connect, hello, retry with back-off.
#include "net_plugin/transport/connector.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "net_plugin/base/log.h"

namespace bagua::net {

Connector::Connector(const ListenHandle& handle, int nStreams, int initialStreams,
                     CallerStreamUse caller, std::shared_ptr<RateLimiter> limiter,
                     const Params& params,
                     EngineSource engines)
    : handle_(handle),
      limiter_(std::move(limiter)),
      params_(params),
      initialStreams_(initialStreams),
      caller_(caller),
      engines_(std::move(engines)),
      connId_(randomToken()),
      conns_(static_cast<size_t>(std::clamp<int>(nStreams, 1, handle.nStreams) +
                                 (caller.open ? 1 : 0))),
      deadline_(Clock::now() + std::chrono::milliseconds(params.connectTimeoutMs)) {
  auto n = static_cast<uint16_t>(conns_.size());
  uint16_t flags = caller.open ? kHelloCallerStream : 0;
  for (uint16_t i = 0; i < n; ++i) conns_[i].hello = makeHello(i, n, handle.token, connId_, flags);
}

std::string Connector::peer() const { return sockAddrToString(handle_.addr); }

std::unique_ptr<SendComm> Connector::progress() {
  bool ready = true;
  for (uint16_t i = 0; i < conns_.size(); ++i) {
    advance(conns_[i]);
    ready = ready && conns_[i].state == State::kReady;
  }
  if (ready) {
    std::vector<Fd> fds;
    for (Conn& conn : conns_) {
      tuneStream(conn.fd.get(), params_);
      fds.push_back(std::move(conn.fd));
    }
    return std::make_unique<SendComm>(std::move(fds), sockAddrToString(handle_.addr), engines_(),
                                      limiter_, params_, initialStreams_, caller_);
  }
  if (Clock::now() > deadline_) {
    int err = 0;
    for (const Conn& conn : conns_) err = conn.lastError != 0 ? conn.lastError : err;
    throw NetError(Status::kRemoteError,
                   errnoMessage("could not connect to " + sockAddrToString(handle_.addr) +
                                    " within " + std::to_string(params_.connectTimeoutMs) +
                                    " ms (BAGUA_NET_CONNECT_TIMEOUT_MS)",
                                err != 0 ? err : ETIMEDOUT));
  }
  return nullptr;
}

void Connector::advance(Conn& conn) {
  if (conn.state == State::kIdle && Clock::now() >= conn.retryAt) startAttempt(conn);
  if (conn.state == State::kConnecting) checkConnected(conn);
  if (conn.state == State::kHello) writeHello(conn);
}

void Connector::startAttempt(Conn& conn) {
  bool inProgress = false;
  int retryErr = 0;
  ++conn.attempts;
  conn.fd = startConnect(handle_.addr, &inProgress, &retryErr);
  if (!conn.fd.valid()) {
    scheduleRetry(conn, retryErr);
    return;
  }
  conn.state = inProgress ? State::kConnecting : State::kHello;
}

void Connector::checkConnected(Conn& conn) {
  pollfd pfd{conn.fd.get(), POLLOUT, 0};
  if (::poll(&pfd, 1, 0) <= 0) return;  // still connecting
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(conn.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err == 0) {
    conn.state = State::kHello;
    return;
  }
  if (!isRetryableConnectError(err)) {
    throw NetError(Status::kSystemError,
                   errnoMessage("connect() to " + sockAddrToString(handle_.addr), err));
  }
  scheduleRetry(conn, err);
}

void Connector::writeHello(Conn& conn) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&conn.hello);
  ssize_t n = ::send(conn.fd.get(), bytes + conn.sent, sizeof(Hello) - conn.sent,
                     MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n > 0) conn.sent += static_cast<size_t>(n);
  if (conn.sent == sizeof(Hello)) {
    conn.state = State::kReady;
    return;
  }
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    if (!isRetryableConnectError(errno) && errno != EPIPE) {
      throw NetError(Status::kSystemError,
                     errnoMessage("sending hello to " + sockAddrToString(handle_.addr), errno));
    }
    scheduleRetry(conn, errno);
  }
}

void Connector::scheduleRetry(Conn& conn, int err) {
  // Linear back-off as NCCL's socket code does: 10 ms, 20 ms, ... up to 1 s.
  conn.fd.reset();
  conn.sent = 0;
  conn.state = State::kIdle;
  conn.lastError = err;
  int waitMs = std::min(1000, 10 * conn.attempts);
  conn.retryAt = Clock::now() + std::chrono::milliseconds(waitMs);
  BAGUA_TRACE_LOG("connect to %s: errno %d, retry %d in %d ms",
                  sockAddrToString(handle_.addr).c_str(), err, conn.attempts, waitMs);
}

}  // namespace bagua::net
