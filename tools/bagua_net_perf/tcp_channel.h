// One direction of the plain-TCP baseline: a connected blocking socket and a
// thread that works through a queue of posted messages in order. Each
// message goes on the wire as an 8-byte length then the payload, so a
// receive may be larger than the send, as with a plugin.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "tools/bagua_net_perf/transport.h"

namespace bagua::net_perf {

// A posted message; the channel's thread completes it, test() reads it.
struct TcpRequest {
  enum State : int { kPending, kDone, kFailed };
  std::atomic<int> state{kPending};
  char* data = nullptr;
  size_t size = 0;    // bytes to send, or capacity of a receive
  size_t bytes = 0;   // bytes moved, valid once kDone
  std::string error;  // valid once kFailed
};

class TcpChannel {
 public:
  // Takes ownership of fd; starts the thread. `timeout` bounds every
  // blocking send or receive (SO_SNDTIMEO / SO_RCVTIMEO).
  TcpChannel(int fd, Direction dir, int peer, std::chrono::seconds timeout);
  ~TcpChannel();
  TcpChannel(const TcpChannel&) = delete;
  TcpChannel& operator=(const TcpChannel&) = delete;

  int peer() const { return peer_; }
  // Queues a message; the returned request belongs to the caller once done.
  TcpRequest* post(char* data, size_t size);
  // Stops the thread (shutting the socket down wakes a blocked call) and joins.
  void stop();

 private:
  void run();
  void transfer(TcpRequest* request);
  void sendAll(const char* data, size_t size);
  void recvAll(char* data, size_t size);

  int fd_;
  Direction dir_;
  int peer_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<TcpRequest*> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace bagua::net_perf
