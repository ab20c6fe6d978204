// Fork-per-rank harness.
#include "tests/runtime/rank_harness.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/store/file_store.h"

namespace bagua::testing {

std::vector<RankOutcome> runRanks(int size, const RankFn& fn, std::chrono::milliseconds timeout) {
  char dirTemplate[] = "/tmp/bagua-test-XXXXXX";
  std::string dir = mkdtemp(dirTemplate);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < size; ++rank) {
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      int code = 1;
      std::string message;
      try {
        FileStore store(dir + "/store");
        code = fn(rank, size, store);
      } catch (const std::exception& e) {
        message = e.what();
        code = 2;
      }
      std::ofstream(dir + "/rank" + std::to_string(rank) + ".msg") << message;
      std::fflush(nullptr);
      _exit(code);
    }
    pids.push_back(pid);
  }
  std::vector<RankOutcome> outcomes(static_cast<size_t>(size));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t left = pids.size();
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (pids[r] <= 0) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      outcomes[r].exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      pids[r] = 0;
      --left;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (size_t r = 0; r < pids.size(); ++r) {
    if (pids[r] > 0) {  // hung: kill it, report -1
      kill(pids[r], SIGKILL);
      waitpid(pids[r], nullptr, 0);
      outcomes[r].exitCode = -1;
    }
    std::ifstream in(dir + "/rank" + std::to_string(r) + ".msg");
    std::stringstream text;
    text << in.rdbuf();
    outcomes[r].message = text.str();
  }
  std::filesystem::remove_all(dir);
  return outcomes;
}

std::string describeFailures(const std::vector<RankOutcome>& outcomes) {
  std::string out;
  for (size_t r = 0; r < outcomes.size(); ++r) {
    if (outcomes[r].exitCode == 0) continue;
    out += "rank " + std::to_string(r) + ": exit " + std::to_string(outcomes[r].exitCode) + ": " +
           outcomes[r].message + "\n";
  }
  return out;
}

}  // namespace bagua::testing
