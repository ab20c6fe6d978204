// Text shared by the stores: how counters are stored (decimal ASCII, so a
// value set by add() reads back as "5" from get(), as in PyTorch's stores),
// and how durations and key lists appear in error messages.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bagua::store_text {

// The counter stored in `value`, or nullopt when it is not a decimal integer.
std::optional<int64_t> parseCounter(const std::vector<uint8_t>& value);
// The stored form of counter `n`.
std::vector<uint8_t> formatCounter(int64_t n);
// `current + delta`, or nullopt on overflow.
std::optional<int64_t> addCounter(int64_t current, int64_t delta);

// "30 s" for whole seconds, "1500 ms" otherwise.
std::string describeDuration(std::chrono::milliseconds d);
// "'a', 'b', 'c'" with at most `limit` keys, then "and N more".
std::string describeKeys(const std::vector<std::string>& keys, size_t limit = 16);

}  // namespace bagua::store_text
