// An IPv4 or IPv6 socket address stored whole (a full sockaddr_in6, unlike
// the 16-byte sockaddr that truncated IPv6 in the original Bagua-Net).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

namespace bagua::net {

union SockAddr {
  sockaddr sa;
  sockaddr_in v4;
  sockaddr_in6 v6;
};

// sizeof the active member; 0 for an unknown family.
socklen_t sockAddrLen(const SockAddr& addr);

// "1.2.3.4:5" or "[fe80::1]:5".
std::string sockAddrToString(const SockAddr& addr);

// Port in host order (0 for an unknown family).
int sockAddrPort(const SockAddr& addr);

}  // namespace bagua::net
