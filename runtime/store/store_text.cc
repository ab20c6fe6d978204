// Counter encoding and message text for the stores.
#include "runtime/store/store_text.h"

#include <charconv>

namespace bagua::store_text {

std::optional<int64_t> parseCounter(const std::vector<uint8_t>& value) {
  const char* first = reinterpret_cast<const char*>(value.data());
  const char* last = first + value.size();
  int64_t n = 0;
  auto [end, ec] = std::from_chars(first, last, n);
  if (value.empty() || ec != std::errc() || end != last) return std::nullopt;
  return n;
}

std::vector<uint8_t> formatCounter(int64_t n) {
  std::string s = std::to_string(n);
  return std::vector<uint8_t>(s.begin(), s.end());
}

std::optional<int64_t> addCounter(int64_t current, int64_t delta) {
  int64_t sum = 0;
  if (__builtin_add_overflow(current, delta, &sum)) return std::nullopt;
  return sum;
}

std::string describeDuration(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  return std::to_string(d.count()) + " ms";
}

std::string describeKeys(const std::vector<std::string>& keys, size_t limit) {
  std::string out;
  for (size_t i = 0; i < keys.size() && i < limit; ++i) {
    if (i > 0) out += ", ";
    out += "'" + keys[i] + "'";
  }
  if (keys.size() > limit) out += " and " + std::to_string(keys.size() - limit) + " more";
  return out;
}

}  // namespace bagua::store_text
