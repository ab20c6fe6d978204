// Socket setup helpers.
#include "net_plugin/base/socket_util.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "net_plugin/base/log.h"
#include "net_plugin/base/status.h"

namespace bagua::net {
namespace {

[[noreturn]] void throwSys(const std::string& what, const SockAddr& addr, int err) {
  // EMFILE/ENFILE/ENOMEM/ENOBUFS are resource exhaustion, a local problem.
  throw NetError(Status::kSystemError, errnoMessage(what + " " + sockAddrToString(addr), err));
}

void setIntOption(int fd, int level, int name, int value, const char* label) {
  if (setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
    BAGUA_INFO(NCCL_NET, "setsockopt %s=%d failed: errno %d (continuing)", label, value, errno);
  }
}

// TCP_RTO_MIN_US from Linux 6.15's uapi, which glibc's header may predate.
#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US 45
#endif

// Sets the minimum retransmission timeout (see Params::rtoMinUs). A kernel
// without the option is told once: at INFO for the automatic value, as a
// WARN when the user asked for one.
void setRtoMin(int fd, int rtoMinUs) {
  int value = rtoMinUs < 0 ? kAutoRtoMinUs : rtoMinUs;
  if (value == 0 || setsockopt(fd, IPPROTO_TCP, TCP_RTO_MIN_US, &value, sizeof(value)) == 0) {
    return;
  }
  static std::atomic<bool> told{false};
  if (told.exchange(true)) return;
  if (rtoMinUs < 0) {
    BAGUA_INFO(NCCL_INIT | NCCL_NET,
               "setsockopt(TCP_RTO_MIN_US=%d) failed: %s (needs Linux 6.15; keeping the kernel's "
               "minimum retransmission timeout)",
               value, strerror(errno));
  } else {
    BAGUA_WARN(
        "BAGUA_NET_RTO_MIN_US=%d: setsockopt(TCP_RTO_MIN_US) failed: %s (needs Linux 6.15; "
        "continuing with the kernel's minimum retransmission timeout)",
        value, strerror(errno));
  }
}

}  // namespace

Fd openListener(const SockAddr& addr, SockAddr* bound) {
  Fd fd(::socket(addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throwSys("socket() for listening on", addr, errno);
  SockAddr local = addr;
  if (local.sa.sa_family == AF_INET) local.v4.sin_port = 0;
  if (local.sa.sa_family == AF_INET6) local.v6.sin6_port = 0;
  if (::bind(fd.get(), &local.sa, sockAddrLen(local)) != 0) throwSys("bind()", local, errno);
  // A deep backlog: all streams of several peers may arrive before accept().
  if (::listen(fd.get(), 16384) != 0) throwSys("listen()", local, errno);
  socklen_t len = sizeof(SockAddr);
  if (::getsockname(fd.get(), &bound->sa, &len) != 0) throwSys("getsockname()", local, errno);
  return fd;
}

bool isRetryableConnectError(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == ENETUNREACH || err == EHOSTUNREACH ||
         err == EAGAIN || err == ECONNRESET || err == EINTR;
}

Fd startConnect(const SockAddr& addr, bool* inProgress, int* retryErr) {
  *inProgress = false;
  *retryErr = 0;
  Fd fd(::socket(addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throwSys("socket() for connecting to", addr, errno);
  if (::connect(fd.get(), &addr.sa, sockAddrLen(addr)) == 0) return fd;
  if (errno == EINPROGRESS) {
    *inProgress = true;
    return fd;
  }
  if (isRetryableConnectError(errno)) {
    *retryErr = errno;
    return Fd();
  }
  throwSys("connect() to", addr, errno);
}

void tuneStream(int fd, const Params& params) {
  setIntOption(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
  setIntOption(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
  // Keepalive probes begin after a third of the timeout and give up at it.
  int idle = params.peerTimeoutSec / 3 > 0 ? params.peerTimeoutSec / 3 : 1;
  int interval = idle / 3 > 0 ? idle / 3 : 1;
  int count = (params.peerTimeoutSec - idle) / interval;
  setIntOption(fd, IPPROTO_TCP, TCP_KEEPIDLE, idle, "TCP_KEEPIDLE");
  setIntOption(fd, IPPROTO_TCP, TCP_KEEPINTVL, interval, "TCP_KEEPINTVL");
  setIntOption(fd, IPPROTO_TCP, TCP_KEEPCNT, count > 0 ? count : 1, "TCP_KEEPCNT");
  setIntOption(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, params.peerTimeoutSec * 1000, "TCP_USER_TIMEOUT");
  if (params.busyPollUs > 0 &&
      setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &params.busyPollUs, sizeof(int)) != 0) {
    // Raising it above net.core.busy_read needs CAP_NET_ADMIN: say so once.
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      BAGUA_WARN(
          "BAGUA_NET_BUSY_POLL_US=%d: setsockopt(SO_BUSY_POLL) failed: %s%s (continuing "
          "without busy polling)",
          params.busyPollUs, strerror(errno),
          errno == EPERM ? "; values above net.core.busy_read need CAP_NET_ADMIN" : "");
    }
  }
  setRtoMin(fd, params.rtoMinUs);
  if (params.socketBufferBytes > 0) {
    int bytes = static_cast<int>(params.socketBufferBytes);
    setIntOption(fd, SOL_SOCKET, SO_SNDBUF, bytes, "SO_SNDBUF");
    setIntOption(fd, SOL_SOCKET, SO_RCVBUF, bytes, "SO_RCVBUF");
  }
}

void endConnection(int fd, bool abortive) {
  int unread = 0;
  if (!abortive && ::ioctl(fd, FIONREAD, &unread) == 0 && unread > 0) abortive = true;
  if (abortive) {
    sockaddr unspec{};
    unspec.sa_family = AF_UNSPEC;
    if (::connect(fd, &unspec, sizeof(unspec)) == 0) return;
  }
  ::shutdown(fd, SHUT_RDWR);
}

int setNonBlocking(int fd, bool nonBlocking) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return errno;
  flags = nonBlocking ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  return ::fcntl(fd, F_SETFL, flags) != 0 ? errno : 0;
}

}  // namespace bagua::net
