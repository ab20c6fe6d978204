// A server process (the cache's redis-server) that cannot outlive the
// process that started it. Between the two sits a watchdog, a forked copy of
// the starter that runs nothing but system calls:
//
//   starter ──fork──► watchdog ──fork+exec──► server
//
// - the server gets PR_SET_PDEATHSIG(SIGKILL) towards the watchdog (which has
//   one thread, so the signal cannot fire early when a thread exits);
// - the watchdog waits on a pidfd of the starter (a poll of getppid() where
//   pidfd_open is missing) and on a control pipe: when the starter exits,
//   however (SIGKILL included), or asks it to, it kills the server, reaps it
//   and exits. If the watchdog itself is killed, PDEATHSIG kills the server.
//
// The server's configuration goes through its stdin (`stdinText`), never its
// command line, so secrets in it (a password) do not show in the process
// table. Its stdout and stderr go to `logPath`.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "posix/fd.h"

namespace bagua {

class GuardedProcess {
 public:
  // Starts `argv` (argv[0] searched in PATH). Throws InvalidArgument when
  // argv is empty or the program cannot be executed (the message names it),
  // std::system_error when fork or pipe fail.
  GuardedProcess(const std::vector<std::string>& argv, const std::string& stdinText,
                 const std::string& logPath);
  // stop(5 s).
  ~GuardedProcess();
  GuardedProcess(const GuardedProcess&) = delete;
  GuardedProcess& operator=(const GuardedProcess&) = delete;

  pid_t pid() const { return serverPid_; }
  pid_t watchdogPid() const { return watchdogPid_; }
  // Whether the server is still running (its watchdog exits when it ends).
  bool running();
  // Kills the server (SIGKILL: servers started this way keep nothing worth a
  // clean shutdown) and waits until it and the watchdog are reaped, at most
  // `timeout` (then the watchdog is killed, and with it the server). Does
  // nothing in any other process than the starter (a forked DataLoader
  // worker holding a copy of this object).
  void stop(std::chrono::milliseconds timeout);

 private:
  pid_t starterPid_ = -1;
  pid_t watchdogPid_ = -1;
  pid_t serverPid_ = -1;
  bool reaped_ = false;
  posix::Fd control_;  // writing a byte, or closing it, asks the watchdog to stop
};

// Whether process `pid` has ended (absent, or a zombie nobody reaped yet).
bool processEnded(pid_t pid);

}  // namespace bagua
