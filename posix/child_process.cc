// ChildProcess and the waits over several children. A child that throws
// writes what() into a pipe before it exits; the parent reads it once the
// child is reaped, so the pipe is already filled and never read blocking.
#include "posix/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>
#include <utility>

namespace bagua::posix {
namespace {

using Clock = std::chrono::steady_clock;

// How often a wait with a deadline looks again.
constexpr std::chrono::milliseconds kPollInterval{2};
// A message longer than an atomic pipe write is cut, so the child's write
// never blocks on a parent that reads only after the child has ended.
constexpr size_t kMaxMessage = PIPE_BUF;

// now + timeout, or the end of time when that does not fit (a timeout of
// milliseconds::max() waits for ever).
Clock::time_point deadlineAfter(std::chrono::milliseconds timeout) {
  auto now = Clock::now();
  auto room = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
  return timeout >= room ? Clock::time_point::max() : now + timeout;
}

[[noreturn]] void runChild(const std::function<int()>& body, int messageFd) {
  int code = ChildProcess::kThrewExit;
  std::string message;
  try {
    code = body();
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "unknown exception";
  }
  if (!message.empty()) {
    ssize_t ignored = ::write(messageFd, message.data(), std::min(message.size(), kMaxMessage));
    (void)ignored;  // nothing left to report a failed report through
  }
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace

ChildProcess::ChildProcess(const std::function<int()>& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  Fd readEnd(fds[0]);
  Fd writeEnd(fds[1]);
  std::fflush(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid_ == 0) {
    readEnd.reset();
    runChild(body, writeEnd.get());
  }
  // Non-blocking: a grandchild holding the write end must not stall the read.
  ::fcntl(readEnd.get(), F_SETFL, O_NONBLOCK);
  messages_ = std::move(readEnd);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      reaped_(std::exchange(other.reaped_, true)),
      abandoned_(other.abandoned_),
      status_(other.status_),
      messages_(std::move(other.messages_)),
      message_(std::move(other.message_)) {}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void ChildProcess::kill(int signal) {
  if (!reaped_) ::kill(pid_, signal);
}

void ChildProcess::reaped(int status) {
  reaped_ = true;
  status_ = status;
  char buf[kMaxMessage];
  ssize_t n = 0;
  while ((n = ::read(messages_.get(), buf, sizeof(buf))) > 0) message_.append(buf, size_t(n));
  messages_.reset();
}

bool ChildProcess::poll() {
  if (reaped_) return false;
  int status = 0;
  pid_t got = ::waitpid(pid_, &status, WNOHANG);
  if (got == pid_) reaped(status);
  return !reaped_;
}

int ChildProcess::wait() {
  while (!reaped_) {
    int status = 0;
    pid_t got = ::waitpid(pid_, &status, 0);
    if (got == pid_) reaped(status);
    if (got < 0 && errno != EINTR) break;
  }
  return exitCode();
}

int ChildProcess::wait(std::chrono::milliseconds timeout) {
  auto deadline = deadlineAfter(timeout);
  while (poll()) {
    if (Clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      wait();
      abandoned_ = true;
      break;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  return exitCode();
}

int ChildProcess::exitCode() const {
  if (!reaped_ || abandoned_) return kStillRunning;
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return kStillRunning;
}

std::string ChildProcess::describeExit() const {
  if (!reaped_ || abandoned_) return "was still running";
  if (WIFSIGNALED(status_)) {
    return "was killed by signal " + std::to_string(WTERMSIG(status_)) + " (" +
           strsignal(WTERMSIG(status_)) + ")";
  }
  return "exited with code " + std::to_string(WEXITSTATUS(status_));
}

size_t waitAny(std::span<ChildProcess> children) {
  for (;;) {
    bool anyRunning = false;
    for (size_t i = 0; i < children.size(); ++i) {
      if (!children[i].running()) continue;
      anyRunning = true;
      if (!children[i].poll()) return i;
    }
    if (!anyRunning) return children.size();
    // Sleeps until some child ends, leaving it to be reaped above (WNOWAIT):
    // the benchmark's launcher must not wake while its ranks measure.
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOWAIT) != 0 && errno != EINTR) return children.size();
    bool ours = false;
    for (const ChildProcess& c : children) ours = ours || (c.running() && c.pid() == info.si_pid);
    // Another part of the process left a child unreaped: look again shortly.
    if (!ours) std::this_thread::sleep_for(kPollInterval);
  }
}

void waitAll(std::span<ChildProcess> children, std::chrono::milliseconds timeout) {
  auto deadline = deadlineAfter(timeout);
  for (ChildProcess& child : children) {
    if (deadline == Clock::time_point::max()) {
      child.wait();
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    child.wait(std::max(left, std::chrono::milliseconds(0)));
  }
}

void stopAll(std::span<ChildProcess> children, std::chrono::milliseconds grace) {
  for (ChildProcess& child : children) child.kill(SIGTERM);
  auto deadline = Clock::now() + grace;
  for (ChildProcess& child : children) {
    while (child.poll()) {
      if (Clock::now() >= deadline) {
        child.kill(SIGKILL);
        child.wait();
      } else {
        std::this_thread::sleep_for(kPollInterval);
      }
    }
  }
}

}  // namespace bagua::posix
