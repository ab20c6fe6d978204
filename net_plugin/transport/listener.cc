// ListenComm: non-blocking accept, hello validation, stream grouping.
#include "net_plugin/transport/listener.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "net_plugin/base/log.h"

namespace bagua::net {
namespace {

// With this many connections waiting for a hello, the listener accepts no
// more: new ones (a real peer's among them) wait in the kernel's queue until
// strays time out, so a flood of strays can neither exhaust the process's
// file descriptors nor have a real peer's streams closed.
constexpr size_t kMaxPending = 1024;

// accept() errors that concern one incoming connection only (accept(2):
// "treat them like EAGAIN by retrying"): the next one may be fine.
bool connectionError(int err) {
  switch (err) {
    case ECONNABORTED:
    case EPROTO:
    case ENOPROTOOPT:
    case ENETDOWN:
    case ENETUNREACH:
    case EHOSTDOWN:
    case EHOSTUNREACH:
    case ENONET:
    case EOPNOTSUPP:
      return true;
    default:
      return false;
  }
}

// How long a connection whose first stream arrived waits for the others: the
// sender keeps connecting them for up to its connect timeout (a lost SYN is
// resent after 1, 3, 7, 15 s).
int groupWaitMs(const Params& params) {
  return std::max(params.handshakeTimeoutMs, params.connectTimeoutMs);
}

// accept() errors of a resource that may come back (descriptors, memory).
bool resourceError(int err) {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

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
  for (auto it = groups_.begin(); it != groups_.end(); ++it) {
    if (it->second.arrived == it->second.fds.size()) {
      Group group = std::move(it->second);
      groups_.erase(it);
      for (Fd& fd : group.fds) tuneStream(fd.get(), params_);
      return std::make_unique<RecvComm>(std::move(group.fds), group.peer, engines_(),
                                        (group.flags & kHelloCallerStream) != 0);
    }
  }
  expireGroups(Clock::now());
  return nullptr;
}

void ListenComm::acceptNew() {
  while (true) {
    if (pending_.size() >= kMaxPending) {
      if (!fullLogged_) {
        BAGUA_WARN("%zu connections to %s are waiting for a hello; new ones wait in the "
                   "kernel's queue until some finish or time out",
                   pending_.size(), sockAddrToString(handle_.addr).c_str());
        fullLogged_ = true;
      }
      return;
    }
    SockAddr peer{};
    socklen_t len = sizeof(peer);
    int fd = ::accept4(fd_.get(), &peer.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR) return;
      if (connectionError(err)) continue;
      std::string what = errnoMessage("accept() on " + sockAddrToString(handle_.addr), err);
      if (!resourceError(err)) throw NetError(Status::kSystemError, what);
      // Out of descriptors or memory: wait for some to come back, as long as
      // a connecting peer keeps trying (BAGUA_NET_CONNECT_TIMEOUT_MS).
      Clock::time_point now = Clock::now();
      if (!starvedSince_) {
        starvedSince_ = now;
        BAGUA_WARN("%s; retrying for up to %d ms", what.c_str(), params_.connectTimeoutMs);
      } else if (now - *starvedSince_ > std::chrono::milliseconds(params_.connectTimeoutMs)) {
        throw NetError(Status::kSystemError,
                       what + " for " + std::to_string(params_.connectTimeoutMs) + " ms");
      }
      return;
    }
    starvedSince_.reset();
    Fd owned(fd);
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
    group.deadline = Clock::now() + std::chrono::milliseconds(groupWaitMs(params_));
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
  // A group presented this listener's token: it is the peer NCCL waits for,
  // and a connection it will never complete is an error, not a silent wait.
  for (auto it = groups_.begin(); it != groups_.end(); ++it) {
    const Group& group = it->second;
    if (group.arrived < group.fds.size() && now > group.deadline) {
      std::string message =
          "only " + std::to_string(group.arrived) + " of " + std::to_string(group.fds.size()) +
          " streams of the connection from " + group.peer + " to " +
          sockAddrToString(handle_.addr) + " arrived within " +
          std::to_string(groupWaitMs(params_)) +
          " ms (BAGUA_NET_CONNECT_TIMEOUT_MS)";
      groups_.erase(it);
      throw NetError(Status::kRemoteError, message);
    }
  }
}

}  // namespace bagua::net
