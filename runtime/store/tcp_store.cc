// TcpStore client on Boost.Asio. Each Connection owns its io_context so that
// one thread can drive it with a deadline (async operation + run_until);
// connections are pooled, and a connection that failed is dropped rather
// than reused, since its stream position is unknown.
#include "runtime/store/tcp_store.h"

// Boost 1.74's Asio needs <utility> first under GCC 12 in C++20 mode.
#include <utility>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <optional>
#include <thread>

#include "runtime/common/error.h"
#include "runtime/store/store_protocol.h"
#include "runtime/store/store_text.h"

namespace bagua {
namespace {

namespace asio = boost::asio;
namespace proto = store_protocol;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

// Back-off between connection attempts while the server is not up yet.
constexpr std::chrono::milliseconds kFirstRetry{10};
constexpr std::chrono::milliseconds kMaxRetry{500};
// Connections kept open between requests; a burst of concurrent requests
// opens more, and those beyond this are closed when they finish.
constexpr size_t kMaxIdleConnections = 4;

std::chrono::milliseconds clampTimeout(std::chrono::milliseconds t) {
  auto limit = std::chrono::milliseconds(proto::kMaxWaitMs);
  return std::clamp(t, std::chrono::milliseconds(0), limit);
}

// "End of file (the server closed the connection)" and similar.
std::string describe(const ErrorCode& ec) {
  std::string text = ec.message();
  if (ec == asio::error::eof || ec == asio::error::connection_reset) {
    text += " (the server closed the connection; has rank 0 exited?)";
  }
  return text;
}

}  // namespace

class TcpStore::Connection {
 public:
  // Runs the async operation begun by `start` until it completes or
  // `deadline` passes; on the deadline the socket is closed (cancelling the
  // operation) and timed_out returned.
  template <typename Start>
  ErrorCode run(Start&& start, Clock::time_point deadline) {
    ErrorCode result = asio::error::would_block;
    bool done = false;
    start([&result, &done](ErrorCode ec, auto&&...) {
      result = ec;
      done = true;
    });
    io_.restart();
    io_.run_until(deadline);
    if (!done) {
      ErrorCode ignored;
      socket_.close(ignored);
      io_.restart();
      io_.run();  // the cancelled operation completes with operation_aborted
      return asio::error::timed_out;
    }
    return result;
  }

  // One attempt to resolve `host` and connect to any of its addresses.
  ErrorCode connect(const std::string& host, int port, Clock::time_point deadline) {
    ErrorCode ec;
    tcp::resolver resolver(io_);
    auto endpoints = resolver.resolve(host, std::to_string(port), ec);
    if (ec) return ec;
    ec = run([&](auto handler) { asio::async_connect(socket_, endpoints, std::move(handler)); },
             deadline);
    if (!ec) socket_.set_option(tcp::no_delay(true), ec);
    return ec;
  }

  // Sends `frame` and reads one response frame to a request of kind `op`.
  // Returns an error code, or sets `response` (nullopt: malformed answer).
  ErrorCode exchange(const std::vector<uint8_t>& frame, proto::Op op, Clock::time_point deadline,
                     std::optional<proto::Response>& response, const char*& stage) {
    stage = "sending the request";
    ErrorCode ec = run(
        [&](auto handler) { asio::async_write(socket_, asio::buffer(frame), std::move(handler)); },
        deadline);
    if (ec) return ec;
    stage = "waiting for the answer";
    std::array<uint8_t, proto::kHeaderBytes> header{};
    ec = run(
        [&](auto handler) { asio::async_read(socket_, asio::buffer(header), std::move(handler)); },
        deadline);
    if (ec) return ec;
    auto length = proto::decodeHeader(header.data());
    if (!length) return ec;  // response stays nullopt
    stage = "reading the answer";
    std::vector<uint8_t> body(*length);
    ec = run(
        [&](auto handler) { asio::async_read(socket_, asio::buffer(body), std::move(handler)); },
        deadline);
    if (!ec) response = proto::decodeResponse(op, body.data(), body.size());
    return ec;
  }

 private:
  asio::io_context io_;
  tcp::socket socket_{io_};
};

TcpStore::TcpStore(std::string host, int port, TcpStoreOptions options)
    : host_(std::move(host)),
      port_(port),
      address_(host_ + ":" + std::to_string(port)),
      options_(options) {
  BAGUA_ENFORCE(port > 0 && port <= 65535,
                "TcpStore: port " + std::to_string(port) + " is not in 1..65535");
  auto deadline = Clock::now() + options_.connectTimeout;
  auto pause = kFirstRetry;
  std::string lastError;
  for (;;) {
    auto connection = std::make_unique<Connection>();
    ErrorCode ec = connection->connect(host_, port_, deadline);
    if (!ec) {
      idle_.push_back(std::move(connection));
      return;
    }
    // An attempt cut short by the deadline says less than the one before.
    if (ec != asio::error::timed_out || lastError.empty()) lastError = ec.message();
    if (Clock::now() + pause >= deadline) {
      BAGUA_THROW(TimeoutError, "TcpStore: could not connect to the store server at " + address_ +
                                    " within " +
                                    store_text::describeDuration(options_.connectTimeout) +
                                    " (last error: " + lastError + ")");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, kMaxRetry);
  }
}

TcpStore::~TcpStore() = default;

std::unique_ptr<TcpStore::Connection> TcpStore::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  // Another thread holds the pooled connection: open one more. The server
  // was up once, so a refusal now means it is gone: no retries.
  auto connection = std::make_unique<Connection>();
  ErrorCode ec = connection->connect(host_, port_, Clock::now() + options_.requestTimeout);
  if (ec) {
    BAGUA_THROW(CommError,
                "TcpStore " + address_ +
                    ": cannot open another connection to the store server: " + describe(ec));
  }
  return connection;
}

void TcpStore::release(std::unique_ptr<Connection> connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (idle_.size() < kMaxIdleConnections) idle_.push_back(std::move(connection));
}

proto::Response TcpStore::call(const proto::Request& request,
                               std::chrono::milliseconds serverWait) {
  std::vector<uint8_t> frame = proto::encodeRequest(request);
  std::string what = std::string(proto::opName(request.op)) + "(" +
                     store_text::describeKeys(request.keys, 4) + ")";
  BAGUA_ENFORCE(frame.size() - proto::kHeaderBytes <= proto::kMaxPayloadBytes,
                "TcpStore " + address_ + ": " + what + " is " + std::to_string(frame.size()) +
                    " bytes; requests are limited to " + std::to_string(proto::kMaxPayloadBytes) +
                    " bytes");
  auto connection = acquire();
  std::optional<proto::Response> response;
  const char* stage = "";
  auto patience = serverWait + options_.requestTimeout;
  ErrorCode ec = connection->exchange(frame, request.op, Clock::now() + patience, response, stage);
  if (ec == asio::error::timed_out) {
    BAGUA_THROW(CommError, "TcpStore " + address_ + ": " + what +
                               " got no answer from the server within " +
                               store_text::describeDuration(patience) + " (" + stage + ")");
  }
  if (ec) {
    BAGUA_THROW(CommError,
                "TcpStore " + address_ + ": " + what + " failed " + stage + ": " + describe(ec));
  }
  if (!response) {
    BAGUA_THROW(CommError,
                "TcpStore " + address_ + ": " + what + ": the server sent a malformed answer");
  }
  release(std::move(connection));
  if (response->status == proto::Status::kError) {
    BAGUA_THROW(InvalidArgument, "TcpStore " + address_ + ": " + response->message);
  }
  return std::move(*response);
}

void TcpStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  proto::Request request;
  request.op = proto::Op::kSet;
  request.keys = {key};
  request.value = value;
  call(request, std::chrono::milliseconds(0));
}

std::vector<uint8_t> TcpStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  proto::Request request;
  request.op = proto::Op::kGet;
  request.keys = {key};
  request.timeoutMs = static_cast<uint64_t>(clampTimeout(timeout).count());
  proto::Response response = call(request, clampTimeout(timeout));
  if (response.status == proto::Status::kTimeout) {
    BAGUA_THROW(TimeoutError, "TcpStore " + address_ + ": get('" + key + "') timed out after " +
                                  store_text::describeDuration(timeout) +
                                  ": the key was never set");
  }
  return std::move(response.value);
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  proto::Request request;
  request.op = proto::Op::kAdd;
  request.keys = {key};
  request.delta = delta;
  return call(request, std::chrono::milliseconds(0)).number;
}

void TcpStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  proto::Request request;
  request.op = proto::Op::kWait;
  request.keys = keys;
  request.timeoutMs = static_cast<uint64_t>(clampTimeout(timeout).count());
  proto::Response response = call(request, clampTimeout(timeout));
  if (response.status == proto::Status::kTimeout) {
    BAGUA_THROW(TimeoutError,
                "TcpStore " + address_ + ": wait timed out after " +
                    store_text::describeDuration(timeout) + "; " +
                    std::to_string(response.missing.size()) + " of " + std::to_string(keys.size()) +
                    " keys still missing: " + store_text::describeKeys(response.missing));
  }
}

}  // namespace bagua
