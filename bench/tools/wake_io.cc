// The Io implementations of wake_io.h.
#include "bench/tools/wake_io.h"

#include <liburing.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace bagua::bench {

void fail(const std::string& what, int err) {
  std::fprintf(stderr, "wake_floor: %s: %s\n", what.c_str(), std::strerror(err));
  std::exit(1);
}

namespace {

void clearEvent(int efd) {
  uint64_t v = 0;
  if (::read(efd, &v, sizeof(v)) < 0 && errno != EAGAIN) fail("read(eventfd)");
}

class BlockingIo final : public Io {
 public:
  explicit BlockingIo(int fd) : fd_(fd) {}
  void sendAll(const char* buf, size_t n) override {
    for (size_t done = 0; done < n;) {
      ssize_t r = ::send(fd_, buf + done, n - done, MSG_NOSIGNAL);
      if (r <= 0) fail("send");
      done += static_cast<size_t>(r);
    }
  }
  void recvAll(char* buf, size_t n) override {
    for (size_t done = 0; done < n;) {
      ssize_t r = ::recv(fd_, buf + done, n - done, 0);
      if (r <= 0) fail(r == 0 ? "peer closed" : "recv", r == 0 ? EPIPE : errno);
      done += static_cast<size_t>(r);
    }
  }
  void waitEvent(int efd) override {  // blocking eventfd read
    pollfd p{efd, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0) fail("poll(eventfd)");
    clearEvent(efd);
  }

 private:
  int fd_;
};

class EpollIo final : public Io {
 public:
  explicit EpollIo(int fd) : fd_(fd), ep_(epoll_create1(EPOLL_CLOEXEC)) {
    if (ep_ < 0) fail("epoll_create1");
    int flags = fcntl(fd_, F_GETFL);
    fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
    ev.data.fd = fd_;
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, fd_, &ev) != 0) fail("epoll_ctl");
  }
  ~EpollIo() override { ::close(ep_); }
  void sendAll(const char* buf, size_t n) override {
    for (size_t done = 0; done < n;) {
      ssize_t r = ::send(fd_, buf + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (r < 0 && errno == EAGAIN) {
        wait();
        continue;
      }
      if (r <= 0) fail("send");
      done += static_cast<size_t>(r);
    }
  }
  void recvAll(char* buf, size_t n) override {
    for (size_t done = 0; done < n;) {
      ssize_t r = ::recv(fd_, buf + done, n - done, MSG_DONTWAIT);
      if (r < 0 && errno == EAGAIN) {
        wait();
        continue;
      }
      if (r <= 0) fail(r == 0 ? "peer closed" : "recv", r == 0 ? EPIPE : errno);
      done += static_cast<size_t>(r);
    }
  }
  void waitEvent(int efd) override {
    if (!eventAdded_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = efd;
      if (epoll_ctl(ep_, EPOLL_CTL_ADD, efd, &ev) != 0) fail("epoll_ctl(eventfd)");
      eventAdded_ = true;
    }
    for (;;) {
      uint64_t v = 0;
      if (::read(efd, &v, sizeof(v)) == sizeof(v)) return;
      wait();
    }
  }

 private:
  void wait() {
    epoll_event evs[4];
    if (epoll_wait(ep_, evs, 4, -1) < 0 && errno != EINTR) fail("epoll_wait");
  }
  int fd_;
  int ep_;
  bool eventAdded_ = false;
};

class UringIo final : public Io {
 public:
  UringIo(int fd, bool deferTaskrun, bool readEvent) : fd_(fd), readEvent_(readEvent) {
    io_uring_params p{};
    if (deferTaskrun) p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int err = io_uring_queue_init_params(64, &ring_, &p);
    if (err < 0) fail("io_uring_queue_init_params", -err);
  }
  ~UringIo() override { io_uring_queue_exit(&ring_); }
  void sendAll(const char* buf, size_t n) override {
    for (size_t done = 0; done < n;) {
      io_uring_prep_send(sqe(), fd_, buf + done, n - done, MSG_NOSIGNAL);
      int r = complete();
      if (r <= 0) fail("io_uring send", -r);
      done += static_cast<size_t>(r);
    }
  }
  void recvAll(char* buf, size_t n) override {
    for (size_t done = 0; done < n;) {
      io_uring_prep_recv(sqe(), fd_, buf + done, n - done, 0);
      int r = complete();
      if (r <= 0) fail(r == 0 ? "peer closed" : "io_uring recv", r == 0 ? EPIPE : -r);
      done += static_cast<size_t>(r);
    }
  }
  // A poll SQE, then read(2), as uring_engine.cc; or (uring-read) one read
  // SQE on a blocking eventfd, which waits and clears in one operation.
  void waitEvent(int efd) override {
    if (readEvent_) {
      uint64_t v = 0;
      io_uring_prep_read(sqe(), efd, &v, sizeof(v), 0);
      int r = complete();
      if (r != sizeof(v)) fail("io_uring read(eventfd)", r < 0 ? -r : EIO);
      return;
    }
    io_uring_prep_poll_add(sqe(), efd, POLLIN);
    int r = complete();
    if (r < 0) fail("io_uring poll(eventfd)", -r);
    clearEvent(efd);
  }
  bool blockingEvent() const override { return readEvent_; }

 private:
  io_uring_sqe* sqe() {
    io_uring_sqe* s = io_uring_get_sqe(&ring_);
    if (s == nullptr) fail("io_uring_get_sqe", EBUSY);
    return s;
  }
  // Submits the one queued SQE and waits for its completion.
  int complete() {
    io_uring_cqe* cqe = nullptr;
    int err = io_uring_submit_and_wait(&ring_, 1);
    if (err < 0) fail("io_uring_submit_and_wait", -err);
    err = io_uring_peek_cqe(&ring_, &cqe);
    if (err < 0) fail("io_uring_peek_cqe", -err);
    int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    return res;
  }
  int fd_;
  bool readEvent_;
  io_uring ring_{};
};

}  // namespace

std::unique_ptr<Io> makeIo(const std::string& mode, int fd) {
  if (mode == "blocking") return std::make_unique<BlockingIo>(fd);
  if (mode == "epoll") return std::make_unique<EpollIo>(fd);
  if (mode == "uring") return std::make_unique<UringIo>(fd, true, false);
  if (mode == "uring-read") return std::make_unique<UringIo>(fd, true, true);
  return std::make_unique<UringIo>(fd, false, false);  // uring-plain; parse() checked the names
}

}  // namespace bagua::bench
