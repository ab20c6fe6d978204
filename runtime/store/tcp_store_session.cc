// Session: the frame loop of one client connection (see tcp_store_session.h).
#include "runtime/store/tcp_store_session.h"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

namespace bagua::store_server {

namespace proto = store_protocol;

void Session::start() {
  server_.sessionOpened(this);
  ErrorCode ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  readHeader();
}

void Session::reply(proto::Op op, const proto::Response& response) {
  if (closed_) return;
  out_.push_back(proto::encodeResponse(op, response));
  if (!writing_) writeNext();
}

void Session::closeWhenFlushed() {
  closeWhenFlushed_ = true;
  if (!writing_) close();
}

void Session::close() {
  if (closed_) return;
  closed_ = true;
  if (waiter_) server_.dropWaiter(waiter_);
  waiter_.reset();
  ErrorCode ignored;
  socket_.close(ignored);
  server_.sessionClosed(this);
}

void Session::readHeader() {
  asio::async_read(socket_, asio::buffer(header_),
                   [self = shared_from_this()](ErrorCode ec, size_t) { self->onHeader(ec); });
}

void Session::onHeader(ErrorCode ec) {
  if (ec || waiter_) return close();
  auto length = proto::decodeHeader(header_.data());
  if (!length) return malformed();
  body_.resize(*length);
  asio::async_read(socket_, asio::buffer(body_),
                   [self = shared_from_this()](ErrorCode e, size_t) { self->onBody(e); });
}

void Session::onBody(ErrorCode ec) {
  if (ec) return close();
  auto request = proto::decodeRequest(body_.data(), body_.size());
  if (!request) return malformed();
  body_.clear();
  body_.shrink_to_fit();
  server_.handle(shared_from_this(), std::move(*request));
  if (!closed_) readHeader();
}

void Session::malformed() {
  server_.malformedFrame();
  close();
}

void Session::writeNext() {
  if (out_.empty()) {
    writing_ = false;
    if (closeWhenFlushed_) close();
    return;
  }
  writing_ = true;
  asio::async_write(socket_, asio::buffer(out_.front()),
                    [self = shared_from_this()](ErrorCode ec, size_t) {
                      if (ec) {
                        self->writing_ = false;
                        return self->close();
                      }
                      self->out_.pop_front();
                      self->writeNext();
                    });
}

}  // namespace bagua::store_server
