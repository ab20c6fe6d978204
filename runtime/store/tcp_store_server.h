// TcpStoreServer: the key/value server behind TcpStore, started by rank 0 on
// MASTER_PORT. One Boost.Asio io_context on its own thread serves every
// connection (so the table and the waiters need no locks); a get or wait for
// a missing key parks server-side until the key is set or the request's
// timeout passes. A malformed frame or a client that disconnects only closes
// that connection. Asio stays in tcp_store_server.cc: this header is plain.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace bagua {

class TcpStoreServer {
 public:
  // Counters for tests and diagnostics; read without stopping the server.
  struct Stats {
    int64_t connections = 0;  // open client connections
    int64_t waiters = 0;      // get/wait requests parked for missing keys
    int64_t keys = 0;         // keys in the table
    int64_t malformed = 0;    // connections closed for a malformed frame
  };

  // Listens on `host`:`port` (port 0: the kernel picks one, see port()) and
  // starts serving; throws CommError naming the address when it cannot.
  explicit TcpStoreServer(int port, const std::string& host = "0.0.0.0");
  // Stops accepting, lets replies already queued go out (up to 1 s), closes
  // every connection and joins the server thread.
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  // The port it listens on (the kernel's pick when constructed with 0).
  int port() const;
  // "host:port" it listens on, for messages.
  std::string address() const;
  // Current counters.
  Stats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bagua
