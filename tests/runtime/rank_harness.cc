// Fork-per-rank harness: local ranks, each with a FileStore in their directory.
#include "tests/runtime/rank_harness.h"

#include <stdexcept>

#include "runtime/store/file_store.h"

namespace bagua::testing {

void check(bool cond, const std::string& what) {
  if (!cond) throw std::runtime_error(what);
}

std::vector<RankOutcome> runRanks(int size, const RankFn& fn, std::chrono::milliseconds timeout) {
  return posix::runLocalRanks(
      size,
      [&fn, size](int rank, const std::string& dir) {
        FileStore store(dir + "/store");
        return fn(rank, size, store);
      },
      timeout);
}

}  // namespace bagua::testing
