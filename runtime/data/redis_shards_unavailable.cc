// RedisShards in a build without hiredis: the class exists so that callers
// compile and link alike, and the constructor says how to get the client.
#include "runtime/data/redis_shards.h"

#include "runtime/common/error.h"

namespace bagua {

struct RedisShards::Connection {};

bool RedisShards::available() { return false; }

RedisShards::RedisShards(std::vector<RedisServer>, std::string, std::chrono::milliseconds) {
  BAGUA_THROW(NotAvailable,
              "this build of bagua has no Redis client: install libhiredis-dev (Debian/Ubuntu; "
              "hiredis elsewhere) and rebuild (meson -Dredis=enabled, or pip install . again), "
              "or use backend=\"memory\"");
}

RedisShards::~RedisShards() = default;

size_t RedisShards::serverOf(std::string_view) const { return 0; }

RedisValues RedisShards::getMany(const std::vector<std::string_view>&) { return {}; }

void RedisShards::setMany(const std::vector<std::pair<std::string_view, std::string_view>>&) {}

std::vector<std::string> RedisShards::info(std::string_view) { return {}; }

std::vector<int64_t> RedisShards::keyCounts() { return {}; }

void RedisShards::exchange(const Commands&, const std::function<void(size_t)>&) {}

}  // namespace bagua
