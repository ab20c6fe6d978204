// SockAddr helpers.
#include "net_plugin/base/sock_addr.h"

#include <arpa/inet.h>

namespace bagua::net {

socklen_t sockAddrLen(const SockAddr& addr) {
  switch (addr.sa.sa_family) {
    case AF_INET:
      return sizeof(sockaddr_in);
    case AF_INET6:
      return sizeof(sockaddr_in6);
    default:
      return 0;
  }
}

std::string sockAddrToString(const SockAddr& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (addr.sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &addr.v4.sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(addr.v4.sin_port));
  }
  if (addr.sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &addr.v6.sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(addr.v6.sin6_port));
  }
  return "<family " + std::to_string(addr.sa.sa_family) + ">";
}

int sockAddrPort(const SockAddr& addr) {
  if (addr.sa.sa_family == AF_INET) return ntohs(addr.v4.sin_port);
  if (addr.sa.sa_family == AF_INET6) return ntohs(addr.v6.sin6_port);
  return 0;
}

}  // namespace bagua::net
