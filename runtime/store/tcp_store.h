// TcpStore: the Store client of a TcpStoreServer (see store_protocol.h for
// the wire format). The constructor retries connecting until its deadline,
// since rank 0 may start its server after the other ranks. Each request is
// one frame out and one frame back on a connection of a small pool, so
// threads sharing a store do not queue behind each other's blocking get; a
// blocking get or wait parks on the server. A server that dies or goes
// silent gives CommError naming the address and the request, never a hang.
// Asio stays in tcp_store.cc: this header is plain.
#pragma once

#include <cstdint>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/store/store.h"

namespace bagua {

namespace store_protocol {
struct Request;
struct Response;
}  // namespace store_protocol

struct TcpStoreOptions {
  // How long the constructor keeps retrying to connect (refused, unreachable,
  // or a host name that does not resolve yet) before it throws TimeoutError.
  std::chrono::milliseconds connectTimeout{std::chrono::seconds(30)};
  // Bound on a set or add, and the time a get or wait allows beyond its own
  // timeout for the server's answer, before the server is declared gone.
  std::chrono::milliseconds requestTimeout{std::chrono::seconds(30)};
};

class TcpStore final : public Store {
 public:
  // Connects to the server at `host`:`port`.
  TcpStore(std::string host, int port, TcpStoreOptions options = {});
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

  // "host:port" of the server, for messages.
  const std::string& address() const { return address_; }

 private:
  class Connection;  // one socket and its io_context, defined in tcp_store.cc

  // Sends `request` and returns the server's answer; throws CommError when
  // the connection fails or no answer comes within `serverWait` plus
  // requestTimeout.
  store_protocol::Response call(const store_protocol::Request& request,
                                std::chrono::milliseconds serverWait);
  std::unique_ptr<Connection> acquire();
  void release(std::unique_ptr<Connection> connection);

  std::string host_;
  int port_;
  std::string address_;
  TcpStoreOptions options_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace bagua
