#include "runtime/examples/local_ranks.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <vector>

namespace bagua::examples {

int runLocalRanks(int ranks, const std::string& tag,
                  const std::function<int(int rank, const std::string& dir)>& rank) {
  std::string dir = std::filesystem::temp_directory_path() / (tag + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    std::fflush(nullptr);  // nothing buffered may be written twice
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      break;
    }
    if (pid == 0) {
      int code = 1;
      try {
        code = rank(r, dir);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
      std::fflush(nullptr);
      _exit(code);
    }
    pids.push_back(pid);
  }
  int failed = static_cast<int>(ranks - pids.size());
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::filesystem::remove_all(dir);
  return failed == 0 ? 0 : 1;
}

}  // namespace bagua::examples
