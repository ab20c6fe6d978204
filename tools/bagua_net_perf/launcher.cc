// See launcher.h. The launcher stays single-threaded, so fork() is safe, and
// loads no plugin itself: each child applies its environment first.
#include "tools/bagua_net_perf/launcher.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

#include "tools/bagua_net_perf/rank_main.h"
#include "tools/bagua_net_perf/rendezvous.h"
#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {

using plugin_driver::errnoText;
using plugin_driver::kExitError;
using plugin_driver::kExitMismatch;
using plugin_driver::kExitOk;

namespace {

struct Child {
  int rank;
  pid_t pid;
  bool running = true;
};

std::string describeStatus(int rank, int status) {
  std::string who = "rank " + std::to_string(rank);
  if (WIFSIGNALED(status)) {
    return who + " was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  int code = WEXITSTATUS(status);
  return who + " exited with code " + std::to_string(code);
}

// Stops the children still running: SIGTERM, then SIGKILL after a grace period.
void killRest(std::vector<Child>& children) {
  for (Child& c : children) {
    if (c.running) kill(c.pid, SIGTERM);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (Child& c : children) {
    while (c.running) {
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.running = false;
      } else if (std::chrono::steady_clock::now() > deadline) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &status, 0);
        c.running = false;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
}

uint64_t commIdOf(const std::string& dir) { return std::hash<std::string>{}(dir) | 1; }

// In a freshly forked (single-threaded) rank: joins network namespace `name`
// (made with `ip netns add`), so ranks can stand for different hosts.
void enterNetns(const std::string& name) {
  std::string path = "/var/run/netns/" + name;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "[bagua-net-perf] cannot enter network namespace %s: %s\n", name.c_str(),
                 std::strerror(errno));
    _exit(kExitError);
  }
  close(fd);
}

}  // namespace

RunOutcome launchRun(const Options& options, const RunSpec& spec) {
  RunOutcome outcome;
  std::string dir = spec.storeRoot + "/" + patternName(spec.pattern) + "." + spec.config->name +
                    ".rep" + std::to_string(spec.rep);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    TOOL_THROW(ToolError, errnoText("mkdir " + dir, errno));
  }
  RankTask task;
  task.pattern = spec.pattern;
  task.config = spec.config;
  task.world = options.worldSize();
  task.storeDir = dir;
  task.label = spec.config->name + " rep " + std::to_string(spec.rep + 1) + "/" +
               std::to_string(options.reps);
  task.commId = commIdOf(dir);
  std::vector<int> local;
  if (options.manual()) {
    local.push_back(options.rank);
  } else {
    for (int r = 0; r < options.ranks; ++r) local.push_back(r);
  }
  std::vector<Child> children;
  for (int rank : local) {
    std::fflush(nullptr);  // children must not flush the parent's buffered output again
    pid_t pid = fork();
    TOOL_SYSCALL(pid, "fork");
    if (pid == 0) {
      task.rank = rank;
      if (!options.netns.empty()) enterNetns(options.netns[static_cast<size_t>(rank)]);
      int code = runRank(options, task);
      std::fflush(nullptr);
      _exit(code);
    }
    children.push_back(Child{rank, pid});
  }
  size_t running = children.size();
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    TOOL_SYSCALL(pid, "waitpid");
    for (Child& c : children) {
      if (c.pid != pid || !c.running) continue;
      c.running = false;
      --running;
      bool clean = WIFEXITED(status) && WEXITSTATUS(status) == kExitOk;
      bool wrongData = WIFEXITED(status) && WEXITSTATUS(status) == kExitMismatch;
      if (!clean && !wrongData && outcome.failure.empty()) {
        outcome.failure = describeStatus(c.rank, status);
        killRest(children);  // a peer of a dead rank would only wait for its timeout
        running = 0;
      }
    }
  }
  FileStore store(dir, options.timeout);
  if (!outcome.failure.empty()) {
    // The earliest explanation is usually the cause; the others are its echoes
    // (a peer that saw the connection drop).
    int first = -1;
    for (int r = 0; r < task.world; ++r) {
      double at = store.writtenAt("error." + std::to_string(r));
      if (at >= 0 && (first < 0 || at < store.writtenAt("error." + std::to_string(first))))
        first = r;
    }
    if (first >= 0) outcome.failure = store.get("error." + std::to_string(first), first, "error");
    return outcome;
  }
  if (options.manual() && options.rank != 0) {
    outcome.ok = true;
    return outcome;
  }
  // Local ranks have finished; ranks elsewhere (manual mode) may still be writing.
  auto deadline = std::chrono::steady_clock::now() + options.timeout;
  for (int r = 0; r < task.world; ++r) {
    std::string result = "result." + std::to_string(r);
    std::string error = "error." + std::to_string(r);
    while (!store.has(result) && !store.has(error)) {
      if (std::chrono::steady_clock::now() > deadline) {
        outcome.failure = "rank " + std::to_string(r) + " reported no results within " +
                          std::to_string(options.timeout.count()) + " s (store " + dir + ")";
        return outcome;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (store.has(error)) {
      outcome.failure = store.get(error, r, "error report");
      return outcome;
    }
    outcome.ranks.push_back(parseRankReport(store.get(result, r, "results")));
  }
  outcome.ok = true;
  return outcome;
}

}  // namespace bagua::net_perf
