// Registry of live ABI objects.
#include "net_plugin/api/registry.h"

#include <mutex>

namespace bagua::net::api {

Registry& Registry::get() {
  static Registry registry;
  return registry;
}

void Registry::add(const void* object, ObjectKind kind) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  objects_[object] = kind;
}

void Registry::remove(const void* object) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  objects_.erase(object);
}

bool Registry::is(const void* object, ObjectKind kind) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  auto it = objects_.find(object);
  return it != objects_.end() && it->second == kind;
}

}  // namespace bagua::net::api
