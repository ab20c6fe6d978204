// Store-level helpers for the rest of the runtime: a barrier built on add()
// and wait(), and the "which ranks are missing" probe that turns a timeout
// into a message naming ranks instead of keys.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "runtime/store/store.h"

namespace bagua {

// Returns once all `worldSize` ranks have called barrier() with this `name`
// as many times as this rank has; reusable (each call is one generation).
// Throws TimeoutError naming the ranks that did not arrive within `timeout`;
// after a timeout the name is spent (generations no longer line up).
void barrier(Store& store, int rank, int worldSize, const std::string& name,
             std::chrono::milliseconds timeout);

// The ranks r in [0, worldSize) whose key `keyOf(r)` is not set now.
std::vector<int> missingRanks(Store& store, int worldSize,
                              const std::function<std::string(int)>& keyOf);

// "rank 3" or "ranks 2, 3" (at most 32 listed, then "and N more").
std::string describeRanks(const std::vector<int>& ranks);

}  // namespace bagua
