// The objects the plugin has handed to NCCL and not yet taken back. Every
// opaque pointer that comes back through the ABI is looked up here before it
// is used, so a stale or foreign pointer is an invalid argument rather than a
// crash. Reader-writer locked: lookups (every isend/irecv/test) share.
#pragma once

#include <shared_mutex>
#include <unordered_map>

namespace bagua::net::api {

enum class ObjectKind { kContext, kListen, kSend, kRecv, kRegion };

class Registry {
 public:
  static Registry& get();

  void add(const void* object, ObjectKind kind);
  void remove(const void* object);
  // True when `object` is live and of `kind`.
  bool is(const void* object, ObjectKind kind) const;

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<const void*, ObjectKind> objects_;
};

}  // namespace bagua::net::api
