// See launcher.h. The launcher stays single-threaded, so fork() is safe, and
// loads no plugin itself: each child (posix::ChildProcess) applies its
// environment first.
#include "tools/bagua_net_perf/launcher.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include "posix/child_process.h"
#include "tools/bagua_net_perf/rank_main.h"
#include "tools/bagua_net_perf/run_store.h"
#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {

using plugin_driver::errnoText;
using plugin_driver::kExitError;
using plugin_driver::kExitMismatch;
using plugin_driver::kExitOk;

namespace {

// How long ranks get to end after SIGTERM once a peer failed.
constexpr std::chrono::seconds kStopGrace{2};

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
  std::vector<posix::ChildProcess> children;
  children.reserve(local.size());
  for (int rank : local) {
    children.emplace_back([&options, task, rank]() mutable {
      task.rank = rank;
      if (!options.netns.empty()) enterNetns(options.netns[static_cast<size_t>(rank)]);
      return runRank(options, task);
    });
  }
  for (size_t ended; (ended = posix::waitAny(children)) < children.size();) {
    int code = children[ended].exitCode();
    if (code != kExitOk && code != kExitMismatch && outcome.failure.empty()) {
      outcome.failure =
          "rank " + std::to_string(local[ended]) + " " + children[ended].describeExit();
      // A peer of a dead rank would only wait for its timeout.
      posix::stopAll(children, kStopGrace);
    }
  }
  RunStore store(dir, options.timeout);
  if (!outcome.failure.empty()) {
    // The earliest explanation is usually the cause; the others are its echoes
    // (a peer that saw the connection drop).
    int first = -1;
    std::optional<std::filesystem::file_time_type> firstAt;
    for (int r = 0; r < task.world; ++r) {
      auto at = store.writtenAt("error." + std::to_string(r));
      if (at && (!firstAt || *at < *firstAt)) {
        first = r;
        firstAt = at;
      }
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
