// ListenComm: non-blocking accept, hello validation, stream grouping.
#include "net_plugin/transport/listener.h"

#include <sys/socket.h>

#include <cerrno>

#include "net_plugin/base/log.h"

namespace bagua::net {
namespace {

// Beyond this many half-open connections, new ones are refused at once, so
// a flood of strays cannot exhaust the process's file descriptors.
constexpr size_t kMaxPending = 1024;

}  // namespace

ListenComm::ListenComm(const NetDevice& device, int nStreams, const Params& params,
                       EngineSource engines)
    : params_(params), engines_(std::move(engines)), nStreams_(nStreams) {
  SockAddr bound{};
  fd_ = openListener(device.addr, &bound);
  handle_ = makeListenHandle(bound, static_cast<uint16_t>(nStreams), randomToken());
}

ListenComm::~ListenComm() = default;

std::unique_ptr<RecvComm> ListenComm::accept() {
  std::lock_guard<std::mutex> lock(mutex_);
  acceptNew();
  for (size_t i = 0; i < pending_.size();) {
    if (readHello(pending_[i])) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  expireGroups(Clock::now());
  for (auto it = groups_.begin(); it != groups_.end(); ++it) {
    if (it->second.arrived == it->second.fds.size()) {
      Group group = std::move(it->second);
      groups_.erase(it);
      for (Fd& fd : group.fds) tuneStream(fd.get(), params_);
      return std::make_unique<RecvComm>(std::move(group.fds), group.peer, engines_(),
                                        (group.flags & kHelloCallerStream) != 0);
    }
  }
  return nullptr;
}

void ListenComm::acceptNew() {
  while (true) {
    SockAddr peer{};
    socklen_t len = sizeof(peer);
    int fd = ::accept4(fd_.get(), &peer.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) {
        return;
      }
      throw NetError(Status::kSystemError,
                     errnoMessage("accept() on " + sockAddrToString(handle_.addr), errno));
    }
    Fd owned(fd);
    if (pending_.size() >= kMaxPending) {
      BAGUA_WARN("refusing connection from %s: %zu connections are already waiting for a hello",
                 sockAddrToString(peer).c_str(), pending_.size());
      continue;
    }
    Pending p;
    p.fd = std::move(owned);
    p.peer = sockAddrToString(peer);
    p.deadline = Clock::now() + std::chrono::milliseconds(params_.handshakeTimeoutMs);
    pending_.push_back(std::move(p));
  }
}

bool ListenComm::readHello(Pending& p) {
  ssize_t n = ::recv(p.fd.get(), p.hello + p.got, sizeof(p.hello) - p.got, MSG_DONTWAIT);
  if (n > 0) p.got += static_cast<size_t>(n);
  if (p.got == sizeof(p.hello)) {
    Hello hello;
    std::string why;
    if (!parseHello(p.hello, sizeof(p.hello), &hello, &why)) {
      BAGUA_WARN("closing connection from %s on %s: %s", p.peer.c_str(),
                 sockAddrToString(handle_.addr).c_str(), why.c_str());
    } else if (hello.token != handle_.token) {
      BAGUA_WARN("closing connection from %s on %s: it did not present this listener's token",
                 p.peer.c_str(), sockAddrToString(handle_.addr).c_str());
    } else if (hello.nStreams > nStreams_ + ((hello.flags & kHelloCallerStream) != 0 ? 1 : 0)) {
      BAGUA_WARN("closing connection from %s: it announces %u streams, this listener at most %d",
                 p.peer.c_str(), hello.nStreams, nStreams_);
    } else {
      admit(p, hello);
    }
    return true;
  }
  bool closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  if (closed) {
    BAGUA_WARN("connection from %s closed after %zu of %zu hello bytes", p.peer.c_str(), p.got,
               sizeof(p.hello));
    return true;
  }
  if (Clock::now() > p.deadline) {
    BAGUA_WARN("closing connection from %s: no complete hello within %d ms (%zu of %zu bytes)",
               p.peer.c_str(), params_.handshakeTimeoutMs, p.got, sizeof(p.hello));
    return true;
  }
  return false;
}

void ListenComm::admit(Pending& p, const Hello& hello) {
  Group& group = groups_[hello.connId];
  if (group.fds.empty()) {
    // The connecting side chose the count (at most the handle's; fewer when
    // NCCL's setNetAttr hints say many channels already run in parallel).
    group.fds.resize(hello.nStreams);
    group.flags = hello.flags;
    group.peer = p.peer;
    group.deadline = p.deadline;
  } else if (hello.nStreams != group.fds.size() || hello.flags != group.flags) {
    BAGUA_WARN(
        "closing connection from %s: its streams disagree on their count (%u and %zu) or flags",
        p.peer.c_str(), hello.nStreams, group.fds.size());
    return;
  }
  Fd& slot = group.fds[hello.streamIndex];
  if (slot.valid()) {
    BAGUA_WARN("closing connection from %s: stream %u of its connection arrived twice",
               p.peer.c_str(), hello.streamIndex);
    return;
  }
  slot = std::move(p.fd);
  ++group.arrived;
}

void ListenComm::expireGroups(Clock::time_point now) {
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (it->second.arrived < it->second.fds.size() && now > it->second.deadline) {
      BAGUA_WARN("dropping connection from %s: only %zu of %zu streams arrived within %d ms",
                 it->second.peer.c_str(), it->second.arrived, it->second.fds.size(),
                 params_.handshakeTimeoutMs);
      it = groups_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace bagua::net
