// posix::runLocalRanks: ranks share one fresh directory that is removed
// afterwards, and each rank's outcome (exit code, what it threw) comes back.
#include "posix/local_ranks.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace bagua::posix {
namespace {

using namespace std::chrono_literals;

TEST(LocalRanks, RanksShareADirectoryThatIsRemovedAfterwards) {
  std::string seen = (std::filesystem::temp_directory_path() / "bagua-local-ranks-test").string();
  auto outcomes = runLocalRanks(3, [&](int rank, const std::string& dir) {
    std::ofstream(dir + "/rank" + std::to_string(rank)) << rank;
    if (rank == 0) std::ofstream(seen) << dir;
    for (int r = 0; r < 3; ++r) {  // every rank sees every other rank's file
      while (!std::filesystem::exists(dir + "/rank" + std::to_string(r))) {
        std::this_thread::sleep_for(1ms);
      }
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
  std::string dir;
  std::ifstream(seen) >> dir;
  std::filesystem::remove(seen);
  ASSERT_FALSE(dir.empty());
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(LocalRanks, FailuresNameTheRankItsCodeAndMessage) {
  auto outcomes = runLocalRanks(3, [](int rank, const std::string&) -> int {
    if (rank == 1) throw std::runtime_error("bad bucket");
    return rank == 2 ? 5 : 0;
  });
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0].exitCode, 0);
  EXPECT_EQ(outcomes[1].message, "bad bucket");
  EXPECT_EQ(describeFailures(outcomes),
            "rank 1: exit 100: bad bucket\n"
            "rank 2: exit 5: \n");
  EXPECT_EQ(mainExitCode(outcomes), 1);
}

TEST(LocalRanks, HungRanksAreKilledAtTheTimeout) {
  auto outcomes = runLocalRanks(
      2,
      [](int rank, const std::string&) {
        if (rank == 1) std::this_thread::sleep_for(1h);
        return 0;
      },
      300ms);
  EXPECT_EQ(outcomes[0].exitCode, 0);
  EXPECT_EQ(outcomes[1].exitCode, -1);
}

}  // namespace
}  // namespace bagua::posix
