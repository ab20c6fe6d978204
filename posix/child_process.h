// A function run in a forked child process: reaped with a deadline, killed
// on demand, and what it threw brought back to the parent. Relies on fork()
// copying only the calling thread: the child must not use what the parent's
// other threads own (a plugin's engine, a store server), and it leaves with
// _exit, so none of the parent's objects are destroyed twice.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <span>
#include <string>

#include "posix/fd.h"

namespace bagua::posix {

class ChildProcess {
 public:
  // Exit code of a child whose function threw; message() has what it threw.
  static constexpr int kThrewExit = 100;
  // exitCode() of a child still running at its deadline (it was then killed).
  static constexpr int kStillRunning = -1;

  // Flushes stdio (so nothing buffered is written twice), forks, and runs
  // `body` in the child, which exits with its return value. Throws
  // std::system_error when the pipe or the fork fails.
  explicit ChildProcess(const std::function<int()>& body);
  // Kills (SIGKILL) and reaps a child that is still running.
  ~ChildProcess();
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // True until the child has been reaped.
  bool running() const { return !reaped_; }
  // Sends `signal` unless the child has been reaped.
  void kill(int signal);
  // Reaps the child if it has ended, without waiting; returns running().
  bool poll();
  // Waits for the child to end and returns exitCode().
  int wait();
  // Waits up to `timeout`; a child still running then is killed, reaped and
  // reported as kStillRunning (milliseconds::max(): no deadline). Returns
  // exitCode().
  int wait(std::chrono::milliseconds timeout);
  // Once reaped: the exit code, 128 + the signal that ended it (the shell's
  // convention), or kStillRunning when wait() gave up on it.
  int exitCode() const;
  // Once reaped: "exited with code 3", "was killed by signal 9 (Killed)".
  std::string describeExit() const;
  // Once reaped: what the function threw ("" when it returned).
  const std::string& message() const { return message_; }

 private:
  void reaped(int status);

  pid_t pid_ = -1;
  bool reaped_ = false;
  bool abandoned_ = false;  // still running at a wait's deadline
  int status_ = 0;          // from waitpid
  Fd messages_;             // read end of the pipe the child reports a throw through
  std::string message_;
};

// Blocks until one of `children` ends and returns its index (it is reaped);
// children.size() when none is running.
size_t waitAny(std::span<ChildProcess> children);

// Waits up to `timeout` for every child; those still running then are killed
// and reported as ChildProcess::kStillRunning (milliseconds::max(): no
// deadline).
void waitAll(std::span<ChildProcess> children, std::chrono::milliseconds timeout);

// Sends SIGTERM to the children still running, gives them `grace` to end,
// then kills (SIGKILL) the rest; every child is reaped on return.
void stopAll(std::span<ChildProcess> children, std::chrono::milliseconds grace);

}  // namespace bagua::posix
