// One client connection of TcpStoreServer, and the waiter a parked get/wait
// leaves. Private to runtime/store (it includes Boost.Asio, which compiles
// slowly): only tcp_store_server.cc and tcp_store_session.cc include it.
// Every call runs on the server thread.
#pragma once

// Boost 1.74's Asio needs <utility> first under GCC 12 in C++20 mode.
#include <utility>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "runtime/store/store_protocol.h"

namespace bagua::store_server {

namespace asio = boost::asio;
using asio::ip::tcp;
using ErrorCode = boost::system::error_code;

class Session;

// A get/wait parked until its keys are all set or its timer fires.
struct Waiter {
  explicit Waiter(asio::io_context& io) : timer(io) {}
  std::weak_ptr<Session> session;
  store_protocol::Request request;
  std::unordered_set<std::string> missing;
  asio::steady_timer timer;
  std::list<std::shared_ptr<Waiter>>::iterator self;
};

// What a session needs from its server.
class SessionOwner {
 public:
  virtual ~SessionOwner() = default;
  // A session started serving.
  virtual void sessionOpened(Session* s) = 0;
  // A session closed its socket.
  virtual void sessionClosed(Session* s) = 0;
  // Answers one request (or parks it, see Session::setWaiter).
  virtual void handle(const std::shared_ptr<Session>& session, store_protocol::Request request) = 0;
  // Forgets a parked request whose session closed.
  virtual void dropWaiter(const std::shared_ptr<Waiter>& waiter) = 0;
  // Counts a connection closed for a malformed frame.
  virtual void malformedFrame() = 0;
};

// One client connection: reads a frame, answers it, reads the next. While a
// get/wait is parked the next header read is already posted; the client may
// not send then, so anything arriving (or EOF) closes the session and drops
// its waiter at once instead of at its timeout.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, SessionOwner& server) : socket_(std::move(socket)), server_(server) {}

  // Registers with the server and reads the first frame.
  void start();
  // Queues one response frame.
  void reply(store_protocol::Op op, const store_protocol::Response& response);
  // Closes now, or after the queued replies went out.
  void closeWhenFlushed();
  // Closes the socket and drops any parked request; idempotent.
  void close();
  // The request parked for this session (at most one), or none.
  void setWaiter(std::shared_ptr<Waiter> w) { waiter_ = std::move(w); }
  void clearWaiter() { waiter_.reset(); }

 private:
  void readHeader();
  void onHeader(ErrorCode ec);
  void onBody(ErrorCode ec);
  void malformed();
  void writeNext();

  tcp::socket socket_;
  SessionOwner& server_;
  std::array<uint8_t, store_protocol::kHeaderBytes> header_{};
  std::vector<uint8_t> body_;
  std::deque<std::vector<uint8_t>> out_;
  std::shared_ptr<Waiter> waiter_;
  bool writing_ = false;
  bool closed_ = false;
  bool closeWhenFlushed_ = false;
};

}  // namespace bagua::store_server
