// Local ranks: a temporary directory, one ChildProcess per rank, one wait.
#include "posix/local_ranks.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "posix/child_process.h"

namespace bagua::posix {

std::vector<RankOutcome> runLocalRanks(
    int ranks, const std::function<int(int rank, const std::string& dir)>& body,
    std::chrono::milliseconds timeout) {
  std::string pattern = (std::filesystem::temp_directory_path() / "bagua-ranks-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  }
  const std::string dir = pattern;
  struct RemoveDir {
    const std::string& dir;
    ~RemoveDir() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } removeDir{dir};
  // Declared after removeDir: a failed fork kills the ranks already started
  // (ChildProcess's destructor) before their directory goes.
  std::vector<ChildProcess> children;
  children.reserve(static_cast<size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) {
    children.emplace_back([&body, &dir, rank] { return body(rank, dir); });
  }
  waitAll(children, timeout);
  std::vector<RankOutcome> outcomes;
  for (const ChildProcess& child : children) {
    outcomes.push_back(RankOutcome{child.exitCode(), child.message()});
  }
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

int mainExitCode(const std::vector<RankOutcome>& outcomes) {
  std::string failures = describeFailures(outcomes);
  std::fputs(failures.c_str(), stderr);
  return failures.empty() ? 0 : 1;
}

}  // namespace bagua::posix
