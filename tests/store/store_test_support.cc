// Temporary directories, ports, forked children and raw sockets for tests.
#include "tests/store/store_test_support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <thread>

namespace bagua::store_testing {
namespace {

constexpr int kExceptionExit = 100;

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

}  // namespace

TempDir::TempDir() {
  char name[] = "/tmp/bagua-store-test-XXXXXX";
  if (::mkdtemp(name) == nullptr) std::abort();
  path_ = name;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

int pickFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = loopback(0);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

Child::Child(const std::function<int()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) std::abort();
  std::fflush(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::close(fds[0]);
    int code = kExceptionExit;
    std::string message;
    try {
      code = body();
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
      message = "unknown exception";
    }
    if (!message.empty() && ::write(fds[1], message.data(), message.size()) < 0) code = 101;
    // _exit: the parent's objects (a server and its thread among them) were
    // copied but are not ours to destroy.
    ::_exit(code);
  }
  ::close(fds[1]);
  messageFd_ = fds[0];
}

Child::~Child() {
  if (!reaped_) wait(std::chrono::milliseconds(0));
  if (messageFd_ >= 0) ::close(messageFd_);
}

void Child::kill(int signal) {
  if (!reaped_) ::kill(pid_, signal);
}

ChildResult Child::wait(std::chrono::milliseconds timeout) {
  ChildResult result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  pid_t got = 0;
  while ((got = ::waitpid(pid_, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (got == 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  } else {
    result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  reaped_ = true;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(messageFd_, buf, sizeof(buf))) > 0) result.message.append(buf, size_t(n));
  return result;
}

std::vector<ChildResult> runChildren(int n, const std::function<int(int)>& body,
                                     std::chrono::milliseconds timeout) {
  std::vector<std::unique_ptr<Child>> children;
  for (int i = 0; i < n; ++i)
    children.push_back(std::make_unique<Child>([&, i] { return body(i); }));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<ChildResult> results;
  for (auto& child : children) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    results.push_back(child->wait(std::max(left, std::chrono::milliseconds(0))));
  }
  return results;
}

std::string describeFailures(const std::vector<ChildResult>& results) {
  std::string out;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].exitCode == 0) continue;
    out += "child " + std::to_string(i) + ": exit " + std::to_string(results[i].exitCode) + ": " +
           results[i].message + "\n";
  }
  return out;
}

int connectRaw(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool sendRaw(int fd, const std::vector<uint8_t>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

bool closedByPeer(int fd, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[256];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return true;
  }
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace bagua::store_testing
