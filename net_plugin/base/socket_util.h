// Small wrappers over the socket system calls the plugin uses, on the owning
// file-descriptor type of posix/fd.h. Setup-time helpers throw NetError naming the call,
// the address and errno (EMFILE and ENOMEM included).
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include "net_plugin/base/params.h"
#include "net_plugin/base/sock_addr.h"
#include "posix/fd.h"

namespace bagua::net {

using posix::Fd;

// A non-blocking listening socket bound to `addr` with an ephemeral port;
// *bound receives the address with the port the kernel chose.
Fd openListener(const SockAddr& addr, SockAddr* bound);

// Starts a non-blocking connect to `addr`. Returns the socket; *inProgress is
// true when the connection completes later (EINPROGRESS). Throws on errors
// that retrying cannot fix; returns an invalid Fd with *retryErr set for
// errors worth retrying (ECONNREFUSED, ENETUNREACH, ETIMEDOUT, EAGAIN).
Fd startConnect(const SockAddr& addr, bool* inProgress, int* retryErr);

// TCP_NODELAY, keepalive and TCP_USER_TIMEOUT (dead-peer detection), and
// buffer sizes from the knobs. Failures are logged, not fatal.
void tuneStream(int fd, const Params& params);

// Ends the connection of socket `fd` for the peer, whatever other
// descriptors of it exist (a fork()ed child's copies keep a socket open past
// our close()): with `abortive`, or with unread bytes (what close() resets
// too), a reset that drops both queues (connect(AF_UNSPEC): tcp_disconnect);
// else shutdown(SHUT_RDWR): queued data, then FIN, and a reset for data the
// peer sends after. The descriptor stays valid for the close protocol.
void endConnection(int fd, bool abortive);

// Sets or clears O_NONBLOCK; returns 0 or the errno of the failed fcntl.
[[nodiscard]] int setNonBlocking(int fd, bool nonBlocking);

// A msghdr for sendmsg/recvmsg over `iovcnt` buffers of `iov` (no address, no
// control data), as every vectored send and receive of the plugin uses.
inline msghdr messageOf(const iovec* iov, int iovcnt) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(iovcnt);
  return msg;
}

// True for connect errors that a later attempt may not hit.
bool isRetryableConnectError(int err);

}  // namespace bagua::net
