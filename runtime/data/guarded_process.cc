// GuardedProcess. After fork the children of a multi-threaded process may
// only make async-signal-safe calls: everything they use (argument arrays,
// the program's path, the pipes) is prepared before the first fork, and the
// watchdog runs nothing but system calls until it _exits.
#include "runtime/data/guarded_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

#include "runtime/common/error.h"

namespace bagua {
namespace {

using Clock = std::chrono::steady_clock;

// How often the watchdog looks at its server when nothing wakes it.
constexpr int kWatchdogTickMs = 200;

// What the watchdog tells the starter once the server has started (or not).
struct Report {
  pid_t serverPid;
  int execErrno;
};

std::string findProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return name;
  } else if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  BAGUA_THROW(InvalidArgument, "cannot run '" + name + "': not found or not executable" +
                                   (name.find('/') == std::string::npos ? " in PATH" : ""));
}

void closeFrom(unsigned first, unsigned last) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, first, last, 0) == 0) return;
#endif
  for (unsigned fd = first; fd <= last && fd < 65536; ++fd) ::close(static_cast<int>(fd));
}

// Marks every descriptor from `first` up close-on-exec.
void closeOnExecFrom(unsigned first) {
#if defined(SYS_close_range) && defined(CLOSE_RANGE_CLOEXEC)
  if (::syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
#endif
  for (int fd = static_cast<int>(first); fd < 65536; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

void writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void defaultSignals() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT})
    ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

struct Plan {
  const char* program;
  char* const* argv;
  const char* input;
  size_t inputSize;
  int logFd;
  int inputRead, inputWrite;  // the server's stdin
  int controlRead;            // the watchdog's end of the control socket
  int reportWrite;            // watchdog -> starter
  pid_t starter;
};

[[noreturn]] void runServer(const Plan& p, pid_t watchdog, int execWrite) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != watchdog) ::_exit(127);  // the watchdog died before the prctl
  ::dup2(p.inputRead, 0);
  ::dup2(p.logFd, 1);
  ::dup2(p.logFd, 2);
  closeOnExecFrom(3);  // execWrite included: it must close on exec anyway
  ::execv(p.program, p.argv);
  int e = errno;
  writeAll(execWrite, reinterpret_cast<const char*>(&e), sizeof(e));
  ::_exit(127);
}

[[noreturn]] void runWatchdog(const Plan& p) {
  ::setpgid(0, 0);  // a terminal's Ctrl-C goes to the job, which then stops us
  defaultSignals();
  const pid_t self = ::getpid();
  int execPipe[2];
  if (::pipe2(execPipe, O_CLOEXEC) != 0) ::_exit(126);
  pid_t server = ::fork();
  if (server < 0) ::_exit(126);
  if (server == 0) runServer(p, self, execPipe[1]);
  ::close(execPipe[1]);
  ::close(p.inputRead);
  Report report{server, 0};
  ssize_t got;
  do {
    got = ::read(execPipe[0], &report.execErrno, sizeof(report.execErrno));
  } while (got < 0 && errno == EINTR);
  if (got <= 0) report.execErrno = 0;  // closed by a successful exec
  writeAll(p.reportWrite, reinterpret_cast<const char*>(&report), sizeof(report));
  int status = 0;
  if (report.execErrno != 0) {
    ::waitpid(server, &status, 0);
    ::_exit(127);
  }
  writeAll(p.inputWrite, p.input, p.inputSize);
  // Keep only the control socket: the starter's other descriptors (its
  // listening sockets above all) must not outlive it here.
  unsigned control = static_cast<unsigned>(p.controlRead);
  if (control > 3) closeFrom(3, control - 1);
  closeFrom(control + 1, ~0U);
  int starterFd = -1, serverFd = -1;  // pidfds: readable when the process ends
#ifdef SYS_pidfd_open
  starterFd = static_cast<int>(::syscall(SYS_pidfd_open, p.starter, 0));
  serverFd = static_cast<int>(::syscall(SYS_pidfd_open, server, 0));
#endif
  for (;;) {
    pollfd fds[3] = {{p.controlRead, POLLIN, 0}, {starterFd, POLLIN, 0}, {serverFd, POLLIN, 0}};
    int ready = ::poll(fds, 3, kWatchdogTickMs);  // a negative fd is skipped
    if (::waitpid(server, &status, WNOHANG) == server) {
      ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    bool stop = ::getppid() != p.starter;  // starter gone (no pidfd: this is the check)
    if (ready > 0) stop = stop || fds[0].revents != 0 || fds[1].revents != 0;
    if (stop) {
      ::kill(server, SIGKILL);
      while (::waitpid(server, &status, 0) < 0 && errno == EINTR) {
      }
      ::_exit(0);
    }
  }
}

}  // namespace

GuardedProcess::GuardedProcess(const std::vector<std::string>& argv, const std::string& stdinText,
                               const std::string& logPath) {
  BAGUA_ENFORCE(!argv.empty(), "a guarded process needs a program to run");
  const std::string program = findProgram(argv[0]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix::Fd log(::open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!log.valid()) {
    BAGUA_THROW(InvalidArgument,
                "cannot write the server log " + logPath + ": " + std::strerror(errno));
  }
  int input[2], report[2], control[2];
  if (::pipe2(input, O_CLOEXEC) != 0 || ::pipe2(report, O_CLOEXEC) != 0 ||
      ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe for a guarded process");
  }
  posix::Fd inputRead(input[0]), inputWrite(input[1]), reportRead(report[0]),
      reportWrite(report[1]), controlRead(control[0]), controlWrite(control[1]);
  Plan plan{program.c_str(), args.data(), stdinText.data(), stdinText.size(), log.get(),
            input[0],        input[1],    control[0],       report[1],        ::getpid()};

  pid_t watchdog = ::fork();
  if (watchdog < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (watchdog == 0) runWatchdog(plan);
  starterPid_ = plan.starter;
  watchdogPid_ = watchdog;
  control_ = std::move(controlWrite);
  reportWrite.reset();  // so a watchdog that dies early gives EOF

  Report got{-1, 0};
  size_t have = 0;
  while (have < sizeof(got)) {
    ssize_t n = ::read(reportRead.get(), reinterpret_cast<char*>(&got) + have, sizeof(got) - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
  }
  if (have < sizeof(got) || got.execErrno != 0) {
    stop(std::chrono::seconds(5));
    BAGUA_THROW(InvalidArgument, "cannot start '" + program + "': " +
                                     (have < sizeof(got) ? std::string("its watchdog died")
                                                         : std::strerror(got.execErrno)));
  }
  serverPid_ = got.serverPid;
}

GuardedProcess::~GuardedProcess() {
  try {
    stop(std::chrono::seconds(5));
  } catch (...) {  // nothing to report to from a destructor
  }
}

bool GuardedProcess::running() {
  if (reaped_) return false;
  if (::getpid() != starterPid_) return !processEnded(watchdogPid_);
  int status = 0;
  if (::waitpid(watchdogPid_, &status, WNOHANG) == watchdogPid_) reaped_ = true;
  return !reaped_;
}

void GuardedProcess::stop(std::chrono::milliseconds timeout) {
  if (reaped_ || watchdogPid_ <= 0 || ::getpid() != starterPid_) return;
  char byte = 's';
  (void)::send(control_.get(), &byte, 1, MSG_NOSIGNAL);  // the watchdog may be gone already
  auto deadline = Clock::now() + timeout;
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(watchdogPid_, &status, WNOHANG);
    if (r == watchdogPid_ || (r < 0 && errno == ECHILD)) break;
    if (Clock::now() >= deadline) {
      ::kill(watchdogPid_, SIGKILL);  // its server gets SIGKILL from PDEATHSIG
      while (::waitpid(watchdogPid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  reaped_ = true;
  control_.reset();
}

bool processEnded(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() &&
         (line[paren + 2] == 'Z' || line[paren + 2] == 'X');
}

}  // namespace bagua
