// TcpStoreServer on Boost.Asio: an acceptor, one Session per connection
// (tcp_store_session.h), and Waiters for blocking get/wait requests. Every
// handler runs on the server thread, so the table, the waiter list and the
// session set are unlocked; only the Stats counters are atomics.
#include "runtime/store/tcp_store_server.h"

// Boost 1.74's Asio needs <utility> first under GCC 12 in C++20 mode.
#include <utility>

#include <atomic>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <list>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "runtime/common/error.h"
#include "runtime/store/store_protocol.h"
#include "runtime/store/store_text.h"
#include "runtime/store/tcp_store_session.h"

namespace bagua {
namespace {

namespace proto = store_protocol;
using store_server::ErrorCode;
using store_server::Session;
using store_server::SessionOwner;
using store_server::tcp;
using store_server::Waiter;
namespace asio = store_server::asio;

// How long the destructor lets queued replies drain before cutting them off.
constexpr std::chrono::seconds kStopGrace{1};
// Pause before accepting again after accept() failed (e.g. out of fds), so a
// persistent failure does not spin the thread.
constexpr std::chrono::milliseconds kAcceptRetry{50};

class ServerCore final : public SessionOwner {
 public:
  ServerCore(int port, const std::string& host);
  ~ServerCore() override;

  // SessionOwner (server thread only).
  void handle(const std::shared_ptr<Session>& session, proto::Request request) override;
  void dropWaiter(const std::shared_ptr<Waiter>& waiter) override;
  void sessionOpened(Session* s) override;
  void sessionClosed(Session* s) override;
  void malformedFrame() override { ++malformed_; }

  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  asio::steady_timer acceptRetry_{io_};
  asio::steady_timer stopTimer_{io_};
  std::string address_;
  int port_ = 0;
  std::atomic<int64_t> connections_{0}, waiters_{0}, keys_{0}, malformed_{0};

 private:
  void accept();
  void stop();
  proto::Response add(const std::string& key, int64_t delta);
  // Parks a get/wait until `missing` are all set or its timeout passes.
  void park(const std::shared_ptr<Session>& session, proto::Request request,
            std::unordered_set<std::string> missing);
  void setValue(const std::string& key, std::vector<uint8_t> value);
  void finishWaiter(const std::shared_ptr<Waiter>& waiter, bool timedOut);

  std::unordered_map<std::string, std::vector<uint8_t>> table_;
  std::list<std::shared_ptr<Waiter>> waitList_;
  std::unordered_set<Session*> sessions_;
  bool stopping_ = false;
  std::thread thread_;
};

ServerCore::ServerCore(int port, const std::string& host) {
  BAGUA_ENFORCE(port >= 0 && port <= 65535,
                "TcpStoreServer: port " + std::to_string(port) + " is not in 0..65535");
  std::string where = host + ":" + std::to_string(port);
  ErrorCode ec;
  tcp::resolver resolver(io_);
  auto endpoints = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || endpoints.empty()) {
    BAGUA_THROW(CommError, "TcpStoreServer: cannot resolve listen address " + where + ": " +
                               (ec ? ec.message() : "no address"));
  }
  tcp::endpoint endpoint = *endpoints.begin();
  auto check = [&](const char* what) {
    if (ec)
      BAGUA_THROW(CommError, "TcpStoreServer: cannot listen on " + where + ": " + what +
                                 " failed: " + ec.message());
  };
  acceptor_.open(endpoint.protocol(), ec);
  check("socket");
  // A restarted job must be able to reuse MASTER_PORT while the previous
  // server's connections sit in TIME_WAIT.
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  check("SO_REUSEADDR");
  acceptor_.bind(endpoint, ec);
  check("bind");
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  check("listen");
  port_ = acceptor_.local_endpoint().port();
  address_ = host + ":" + std::to_string(port_);
  accept();
  thread_ = std::thread([this] {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bagua store server %s: handler failed: %s\n", address_.c_str(),
                     e.what());
      }
    }
  });
}

ServerCore::~ServerCore() {
  asio::post(io_, [this] { stop(); });
  thread_.join();
  // Sessions parked in uninvoked handlers are freed by ~io_context; waiters
  // hold only weak references to them.
  waitList_.clear();
}

void ServerCore::accept() {
  acceptor_.async_accept([this](ErrorCode ec, tcp::socket socket) {
    if (stopping_) return;
    if (ec) {
      acceptRetry_.expires_after(kAcceptRetry);
      acceptRetry_.async_wait([this](ErrorCode e) {
        if (!e && !stopping_) accept();
      });
      return;
    }
    std::make_shared<Session>(std::move(socket), *this)->start();
    accept();
  });
}

void ServerCore::stop() {
  stopping_ = true;
  ErrorCode ignored;
  acceptor_.close(ignored);
  acceptRetry_.cancel();
  if (sessions_.empty()) return;
  stopTimer_.expires_after(kStopGrace);
  stopTimer_.async_wait([this](ErrorCode ec) {
    if (!ec) io_.stop();
  });
  // close() erases from sessions_, so walk a copy.
  std::vector<Session*> open(sessions_.begin(), sessions_.end());
  for (Session* s : open) s->closeWhenFlushed();
}

void ServerCore::sessionOpened(Session* s) {
  sessions_.insert(s);
  connections_ = static_cast<int64_t>(sessions_.size());
}

void ServerCore::sessionClosed(Session* s) {
  sessions_.erase(s);
  connections_ = static_cast<int64_t>(sessions_.size());
  if (stopping_ && sessions_.empty()) stopTimer_.cancel();
}

void ServerCore::handle(const std::shared_ptr<Session>& session, proto::Request request) {
  proto::Response response;
  std::string key = request.keys.empty() ? std::string() : request.keys[0];
  switch (request.op) {
    case proto::Op::kSet:
      setValue(key, std::move(request.value));
      break;
    case proto::Op::kAdd:
      response = add(key, request.delta);
      break;
    case proto::Op::kGet:
    case proto::Op::kWait: {
      std::unordered_set<std::string> missing;
      for (const auto& k : request.keys) {
        if (!table_.count(k)) missing.insert(k);
      }
      if (!missing.empty()) return park(session, std::move(request), std::move(missing));
      if (request.op == proto::Op::kGet) response.value = table_[key];
      break;
    }
  }
  session->reply(request.op, response);
}

proto::Response ServerCore::add(const std::string& key, int64_t delta) {
  proto::Response response;
  auto it = table_.find(key);
  // An unset key counts from 0.
  std::optional<int64_t> parsed =
      it == table_.end() ? std::optional<int64_t>(0) : store_text::parseCounter(it->second);
  std::optional<int64_t> sum = parsed ? store_text::addCounter(*parsed, delta) : std::nullopt;
  if (!parsed) {
    response.status = proto::Status::kError;
    response.message = "add('" + key + "'): the stored value is not a decimal integer";
  } else if (!sum) {
    response.status = proto::Status::kError;
    response.message = "add('" + key + "', " + std::to_string(delta) + ") overflows the counter " +
                       std::to_string(*parsed);
  } else {
    response.number = *sum;
    setValue(key, store_text::formatCounter(*sum));
  }
  return response;
}

void ServerCore::park(const std::shared_ptr<Session>& session, proto::Request request,
                      std::unordered_set<std::string> missing) {
  auto waiter = std::make_shared<Waiter>(io_);
  waiter->session = session;
  waiter->request = std::move(request);
  waiter->missing = std::move(missing);
  waitList_.push_front(waiter);
  waiter->self = waitList_.begin();
  ++waiters_;
  session->setWaiter(waiter);
  waiter->timer.expires_after(std::chrono::milliseconds(waiter->request.timeoutMs));
  waiter->timer.async_wait([this, waiter](ErrorCode ec) {
    if (!ec) finishWaiter(waiter, true);
  });
}

void ServerCore::setValue(const std::string& key, std::vector<uint8_t> value) {
  table_[key] = std::move(value);
  keys_ = static_cast<int64_t>(table_.size());
  std::vector<std::shared_ptr<Waiter>> ready;
  for (const auto& w : waitList_) {
    if (w->missing.erase(key) && w->missing.empty()) ready.push_back(w);
  }
  for (const auto& w : ready) finishWaiter(w, false);
}

void ServerCore::finishWaiter(const std::shared_ptr<Waiter>& waiter, bool timedOut) {
  // A timer that expired just as the last key arrived still runs its
  // handler; the waiter was already answered then.
  if (waiter->self == waitList_.end()) return;
  auto session = waiter->session.lock();
  dropWaiter(waiter);
  if (!session) return;
  session->clearWaiter();
  proto::Response response;
  if (timedOut) {
    response.status = proto::Status::kTimeout;
    // Report the missing keys in the order the client asked for them.
    for (const auto& k : waiter->request.keys) {
      if (waiter->missing.count(k)) response.missing.push_back(k);
    }
  } else if (waiter->request.op == proto::Op::kGet) {
    response.value = table_[waiter->request.keys[0]];
  }
  session->reply(waiter->request.op, response);
}

void ServerCore::dropWaiter(const std::shared_ptr<Waiter>& waiter) {
  if (waiter->self == waitList_.end()) return;
  waiter->timer.cancel();
  waitList_.erase(waiter->self);
  waiter->self = waitList_.end();
  --waiters_;
}

}  // namespace

class TcpStoreServer::Impl {
 public:
  Impl(int port, const std::string& host) : core(port, host) {}
  ServerCore core;
};

TcpStoreServer::TcpStoreServer(int port, const std::string& host)
    : impl_(std::make_unique<Impl>(port, host)) {}

TcpStoreServer::~TcpStoreServer() = default;

int TcpStoreServer::port() const { return impl_->core.port_; }

std::string TcpStoreServer::address() const { return impl_->core.address_; }

TcpStoreServer::Stats TcpStoreServer::stats() const {
  Stats s;
  s.connections = impl_->core.connections_.load();
  s.waiters = impl_->core.waiters_.load();
  s.keys = impl_->core.keys_.load();
  s.malformed = impl_->core.malformed_.load();
  return s;
}

}  // namespace bagua
