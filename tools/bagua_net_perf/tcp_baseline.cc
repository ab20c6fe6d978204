// See tcp_baseline.h. Set-up order avoids deadlock without non-blocking
// sockets: every rank listens and publishes its address first, then
// connects (a connect to a listening socket completes in the backlog, before
// accept), then accepts.
#include "tools/bagua_net_perf/tcp_baseline.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {

using plugin_driver::errnoText;
using plugin_driver::ToolError;

namespace {

using Clock = std::chrono::steady_clock;

std::string addressKey(int listener, int sender) {
  return "tcp." + std::to_string(listener) + ".from." + std::to_string(sender);
}

// NCCL_SOCKET_IFNAME's first entry ("=eth0" exact, "eth" prefix); "^..."
// (an exclusion list) and unset fall back to lo.
std::string chooseInterface(const std::string& requested) {
  std::string spec = requested;
  if (spec.empty()) {
    const char* env = std::getenv("NCCL_SOCKET_IFNAME");
    spec = env ? env : "";
    spec = spec.substr(0, spec.find(','));
  }
  if (spec.empty() || spec[0] == '^') return "lo";
  return spec;
}

std::string interfaceAddress(const std::string& spec) {
  bool exact = spec[0] == '=';
  std::string name = exact ? spec.substr(1) : spec;
  ifaddrs* list = nullptr;
  TOOL_SYSCALL(getifaddrs(&list), "getifaddrs");
  std::string found;
  for (ifaddrs* ifa = list; ifa && found.empty(); ifa = ifa->ifa_next) {
    if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET) continue;
    std::string ifName = ifa->ifa_name;
    if (exact ? ifName != name : ifName.rfind(name, 0) != 0) continue;
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(ifa->ifa_addr)->sin_addr, text,
              sizeof(text));
    found = text;
  }
  freeifaddrs(list);
  if (found.empty()) {
    TOOL_THROW(ToolError, "TCP baseline: no IPv4 address on an interface matching '" + spec +
                              "' (set --baseline-if or NCCL_SOCKET_IFNAME)");
  }
  return found;
}

sockaddr_in makeAddress(const std::string& ip, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    TOOL_THROW(ToolError, "bad IPv4 address '" + ip + "'");
  }
  return addr;
}

TcpRequest* asTcp(Request* request) {
  return static_cast<TcpRequest*>(static_cast<void*>(request));
}
Request* asOpaque(TcpRequest* request) {
  return static_cast<Request*>(static_cast<void*>(request));
}

}  // namespace

TcpTransport::TcpTransport(const TcpTransportParams& params, RunStore& store)
    : params_(params),
      store_(store),
      ifname_(chooseInterface(params.ifname)),
      address_(interfaceAddress(ifname_)) {}

TcpTransport::~TcpTransport() { close(); }

std::string TcpTransport::describe() const {
  return "plain TCP over " + ifname_ + " (" + address_ +
         "), one blocking socket per direction, a send and a receive thread";
}

void TcpTransport::connect(const std::vector<int>& sendPeers, const std::vector<int>& recvPeers) {
  auto deadline = Clock::now() + params_.timeout;
  std::vector<std::pair<int, int>> listeners;  // (peer, fd)
  for (int peer : recvPeers) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    TOOL_SYSCALL(fd, "socket");
    sockaddr_in addr = makeAddress(address_, 0);
    socklen_t len = sizeof(addr);
    TOOL_SYSCALL(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), "bind to " + address_);
    TOOL_SYSCALL(::listen(fd, 4), "listen");
    TOOL_SYSCALL(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), "getsockname");
    store_.put(addressKey(params_.rank, peer),
               address_ + " " + std::to_string(ntohs(addr.sin_port)));
    listeners.emplace_back(peer, fd);
  }
  for (int peer : sendPeers) {
    std::istringstream where(store_.get(addressKey(peer, params_.rank), peer, "TCP address"));
    std::string ip;
    int port = 0;
    where >> ip >> port;
    sockaddr_in addr = makeAddress(ip, port);
    int fd = -1;
    while (true) {
      fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      TOOL_SYSCALL(fd, "socket");
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) break;
      int err = errno;
      ::close(fd);
      if (Clock::now() > deadline) {
        TOOL_THROW(TimeoutError, errnoText("connect to rank " + std::to_string(peer) + " at " + ip +
                                               ":" + std::to_string(port),
                                           err));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    int32_t hello = params_.rank;  // the acceptor checks who connected
    TOOL_ENFORCE(send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) == sizeof(hello), "send hello");
    sends_.push_back(std::make_unique<TcpChannel>(fd, Direction::kSend, peer, params_.timeout));
  }
  for (auto [peer, listenFd] : listeners) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd pfd{listenFd, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(std::max<long>(left.count(), 0))) != 1) {
      TOOL_THROW(TimeoutError, "no TCP connection from rank " + std::to_string(peer));
    }
    int fd = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
    TOOL_SYSCALL(fd, "accept");
    ::close(listenFd);
    int32_t hello = -1;
    TOOL_ENFORCE(recv(fd, &hello, sizeof(hello), MSG_WAITALL) == sizeof(hello) && hello == peer,
                 "TCP baseline: expected rank " + std::to_string(peer) + " to connect, got " +
                     std::to_string(hello));
    recvs_.push_back(std::make_unique<TcpChannel>(fd, Direction::kRecv, peer, params_.timeout));
  }
}

TcpChannel& TcpTransport::channel(std::vector<std::unique_ptr<TcpChannel>>& channels, int peer) {
  for (auto& ch : channels) {
    if (ch->peer() == peer) return *ch;
  }
  TOOL_THROW(ToolError, "no TCP connection with rank " + std::to_string(peer));
}

MemHandle* TcpTransport::registerMemory(Direction, int, void*, size_t) { return nullptr; }

Request* TcpTransport::isend(int peer, void* data, size_t size, MemHandle*) {
  return asOpaque(channel(sends_, peer).post(static_cast<char*>(data), size));
}

Request* TcpTransport::irecv(int peer, void* data, size_t size, MemHandle*) {
  return asOpaque(channel(recvs_, peer).post(static_cast<char*>(data), size));
}

bool TcpTransport::test(Request* opaque, size_t* bytes) {
  TcpRequest* request = asTcp(opaque);
  int state = request->state.load(std::memory_order_acquire);
  if (state == TcpRequest::kPending) return false;
  if (state == TcpRequest::kFailed) {
    std::string error = request->error;
    delete request;
    throw ToolError("TCP baseline: " + error);
  }
  *bytes = request->bytes;
  delete request;
  return true;
}

void TcpTransport::close() {
  for (auto& ch : sends_) ch->stop();
  for (auto& ch : recvs_) ch->stop();
  sends_.clear();
  recvs_.clear();
}

}  // namespace bagua::net_perf
