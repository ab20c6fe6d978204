// Barrier on a Store: a counter per name gives each call its generation;
// the last rank of a generation sets its "done" key, which the others wait
// on. Each rank also sets an arrival key, read only to name the missing
// ranks when the wait times out.
#include "runtime/store/barrier.h"

#include "runtime/common/error.h"
#include "runtime/store/store_text.h"

namespace bagua {
namespace {
constexpr size_t kMaxRanksListed = 32;
}  // namespace

void barrier(Store& store, int rank, int worldSize, const std::string& name,
             std::chrono::milliseconds timeout) {
  BAGUA_ENFORCE(worldSize >= 1 && rank >= 0 && rank < worldSize,
                "barrier '" + name + "': rank " + std::to_string(rank) + " is not in 0.." +
                    std::to_string(worldSize - 1));
  std::string base = "barrier/" + name + "/";
  // The generation comes from a per-rank counter, so arrival keys can be
  // set before the shared counter moves.
  int64_t generation = store.add(base + "calls/" + std::to_string(rank), 1) - 1;
  std::string genBase = base + std::to_string(generation) + "/";
  auto arrivalKey = [&](int r) { return genBase + "rank/" + std::to_string(r); };
  store.set(arrivalKey(rank), {1});
  int64_t arrived = store.add(base + "count", 1);
  if (arrived == (generation + 1) * worldSize) store.set(genBase + "done", {1});
  try {
    store.wait({genBase + "done"}, timeout);
  } catch (const TimeoutError&) {
    std::vector<int> missing = missingRanks(store, worldSize, arrivalKey);
    BAGUA_THROW(TimeoutError, "barrier '" + name + "': " + describeRanks(missing) + " of " +
                                  std::to_string(worldSize) + " did not arrive within " +
                                  store_text::describeDuration(timeout));
  }
}

std::vector<int> missingRanks(Store& store, int worldSize,
                              const std::function<std::string(int)>& keyOf) {
  std::vector<int> missing;
  for (int r = 0; r < worldSize; ++r) {
    try {
      store.wait({keyOf(r)}, std::chrono::milliseconds(0));
    } catch (const TimeoutError&) {
      missing.push_back(r);
    }
  }
  return missing;
}

std::string describeRanks(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size() && i < kMaxRanksListed; ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(ranks[i]);
  }
  if (ranks.size() > kMaxRanksListed) {
    out += " and " + std::to_string(ranks.size() - kMaxRanksListed) + " more";
  }
  return out;
}

}  // namespace bagua
