// See tcp_channel.h.
#include "tools/bagua_net_perf/tcp_channel.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {

using plugin_driver::errnoText;

TcpChannel::TcpChannel(int fd, Direction dir, int peer, std::chrono::seconds timeout)
    : fd_(fd), dir_(dir), peer_(peer) {
  int one = 1;
  // Small messages must not wait for Nagle's coalescing (NCCL's sockets do the same).
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count());
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  thread_ = std::thread([this] { run(); });
}

TcpChannel::~TcpChannel() {
  stop();
  close(fd_);
}

TcpRequest* TcpChannel::post(char* data, size_t size) {
  auto* request = new TcpRequest;
  request->data = data;
  request->size = size;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(request);
  }
  wake_.notify_one();
  return request;
}

void TcpChannel::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_one();
  shutdown(fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  for (TcpRequest* request : queue_) delete request;  // never started
  queue_.clear();
}

void TcpChannel::run() {
  while (true) {
    TcpRequest* request = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      request = queue_.front();
      queue_.pop_front();
    }
    try {
      transfer(request);
      request->state.store(TcpRequest::kDone, std::memory_order_release);
    } catch (const std::exception& e) {
      request->error = e.what();
      request->state.store(TcpRequest::kFailed, std::memory_order_release);
      return;  // the stream is out of step now; later requests time out in the caller
    }
  }
}

void TcpChannel::transfer(TcpRequest* request) {
  uint64_t length = request->size;
  if (dir_ == Direction::kSend) {
    sendAll(reinterpret_cast<const char*>(&length), sizeof(length));
    sendAll(request->data, request->size);
    request->bytes = request->size;
    return;
  }
  recvAll(reinterpret_cast<char*>(&length), sizeof(length));
  if (length > request->size) {
    TOOL_THROW(ToolError, "message of " + std::to_string(length) + " B from rank " +
                              std::to_string(peer_) + " exceeds the posted receive of " +
                              std::to_string(request->size) + " B");
  }
  recvAll(request->data, length);
  request->bytes = length;
}

void TcpChannel::sendAll(const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = send(fd_, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      TOOL_THROW(ToolError, errnoText("send to rank " + std::to_string(peer_), errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void TcpChannel::recvAll(char* data, size_t size) {
  while (size > 0) {
    ssize_t n = recv(fd_, data, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      TOOL_THROW(ToolError, errnoText("recv from rank " + std::to_string(peer_), errno));
    }
    if (n == 0) TOOL_THROW(ToolError, "rank " + std::to_string(peer_) + " closed the connection");
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace bagua::net_perf
