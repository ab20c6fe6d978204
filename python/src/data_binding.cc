// bagua._C's cache classes. Errors: CacheConnectError -> ConnectionError,
// CacheAuthError -> PermissionError (translated here, before module.cc's
// general translator, which nanobind tries after this one).
#include "python/src/data_binding.h"

#include <Python.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/data/cache_errors.h"
#include "runtime/data/guarded_process.h"
#include "runtime/data/key_hash.h"
#include "runtime/data/memory_cache.h"
#include "runtime/data/redis_shards.h"
#include "runtime/data/shared_counters.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace bagua::python {
namespace {

std::chrono::milliseconds seconds(double s) {
  BAGUA_ENFORCE(std::isfinite(s) && s > 0,
                "a timeout must be a positive number of seconds, got " + std::to_string(s));
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(s * 1000)));
}

// A new bytearray of `size` bytes (uninitialized); its buffer goes to *data.
nb::object newByteArray(size_t size, uint8_t** data) {
  PyObject* array = PyByteArray_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size));
  if (array == nullptr) throw nb::python_error();
  *data = reinterpret_cast<uint8_t*>(PyByteArray_AS_STRING(array));
  return nb::steal(array);
}

std::string_view viewOf(const nb::bytes& b) { return {b.c_str(), b.size()}; }

nb::object memoryGet(MemoryCache& cache, const std::string& key) {
  nb::object out = nb::none();
  cache.get(key, [&](size_t size) {
    uint8_t* data = nullptr;
    out = newByteArray(size, &data);
    return data;
  });
  return out;
}

nb::list memoryGetMany(MemoryCache& cache, const std::vector<std::string>& keys) {
  nb::list out;
  for (const auto& key : keys) out.append(memoryGet(cache, key));
  return out;
}

size_t memoryPutMany(MemoryCache& cache,
                     const std::vector<std::pair<std::string, nb::bytes>>& items) {
  size_t stored = 0;
  for (const auto& [key, value] : items) {
    if (cache.put(key, viewOf(value)) == CachePutResult::kStored) ++stored;
  }
  return stored;
}

nb::dict counterDict(const CacheShardCounters& c) {
  nb::dict d;
  d["hits"] = c.hits;
  d["misses"] = c.misses;
  d["inserts"] = c.inserts;
  d["evictions"] = c.evictions;
  d["rejected"] = c.rejected;
  d["recoveries"] = c.recoveries;
  d["entries"] = c.entries;
  d["bytes"] = c.bytes;
  return d;
}

std::unique_ptr<RedisShards> newRedis(const std::vector<std::pair<std::string, int>>& servers,
                                      const std::string& password, double timeoutS) {
  std::vector<RedisServer> list;
  for (const auto& [host, port] : servers) list.push_back(RedisServer{host, port});
  auto timeout = seconds(timeoutS);
  nb::gil_scoped_release release;
  return std::make_unique<RedisShards>(std::move(list), password, timeout);
}

// A writable uint8 array over a fetched value, without a copy: it keeps the
// value's buffer alive until the last view of it (tensors decoded from it
// included) is gone.
using ByteView = nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>;

nb::object viewOfReply(const RedisValues& values, size_t i) {
  auto* owner = new std::shared_ptr<char[]>(values.owner(i));
  nb::capsule keep(owner,
                   [](void* p) noexcept { delete static_cast<std::shared_ptr<char[]>*>(p); });
  std::string_view bytes = *values[i];
  size_t shape[1] = {bytes.size()};
  return nb::cast(ByteView(const_cast<char*>(bytes.data()), 1, shape, keep));
}

nb::list redisGetMany(RedisShards& redis, const std::vector<std::string>& keys) {
  std::vector<std::string_view> views(keys.begin(), keys.end());
  RedisValues values;
  {
    nb::gil_scoped_release release;
    values = redis.getMany(views);
  }
  nb::list out;
  for (size_t i = 0; i < values.size(); ++i) {
    out.append(values[i] ? viewOfReply(values, i) : nb::none());
  }
  return out;
}

void redisSetMany(RedisShards& redis, const std::vector<std::pair<std::string, nb::bytes>>& items) {
  std::vector<std::pair<std::string_view, std::string_view>> views;
  views.reserve(items.size());
  for (const auto& [key, value] : items) views.emplace_back(key, viewOf(value));
  nb::gil_scoped_release release;
  redis.setMany(views);
}

}  // namespace

void bindData(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const CacheAuthError& e) {
      PyErr_SetString(PyExc_PermissionError, e.what());
    } catch (const CacheConnectError& e) {
      PyErr_SetString(PyExc_ConnectionError, e.what());
    }
  });
  const auto release = nb::call_guard<nb::gil_scoped_release>();

  nb::class_<MemoryCache>(m, "MemoryCache",
                          "A bounded key/value cache in memory shared by the processes of a node "
                          "(sharded, FIFO eviction, robust per-shard locks).")
      .def_static("create", &MemoryCache::create, "capacity_bytes"_a, "shards"_a = 0,
                  "mean_entry_bytes"_a = 1024,
                  "A new cache of capacity_bytes (shards 0: one per 64 MiB, 1 to 16).")
      .def_static("attach", &MemoryCache::attach, "path"_a,
                  "The cache another process of this node created (its attach_path).")
      .def("get", &memoryGet, "key"_a, "The value (a bytearray) or None.")
      .def("get_many", &memoryGetMany, "keys"_a, "Values (bytearray or None) of keys, in order.")
      .def(
          "put",
          [](MemoryCache& c, const std::string& key, const nb::bytes& value) {
            return c.put(key, viewOf(value)) == CachePutResult::kStored;
          },
          "key"_a, "value"_a, "Stores value; False when it is larger than max_value_bytes.")
      .def("put_many", &memoryPutMany, "items"_a,
           "Stores (key, bytes) pairs; returns how many fit.")
      .def("clear", &MemoryCache::clear, release)
      .def(
          "stats", [](MemoryCache& c) { return counterDict(c.stats()); },
          "Node-wide counters: hits, misses, inserts, evictions, rejected, recoveries, entries, "
          "bytes.")
      .def_prop_ro("attach_path", &MemoryCache::attachPath)
      .def_prop_ro("shard_count", &MemoryCache::shardCount)
      .def_prop_ro("capacity_bytes", &MemoryCache::capacityBytes)
      .def_prop_ro("max_value_bytes", &MemoryCache::maxValueBytes);

  nb::class_<SharedCounters>(m, "SharedCounters",
                             "Counters shared with forked or attached processes.")
      .def_static("create", &SharedCounters::create, "count"_a)
      .def_static("attach", &SharedCounters::attach, "path"_a)
      .def("add", &SharedCounters::add, "index"_a, "delta"_a = 1,
           "Adds delta; returns the value before.")
      .def("get", &SharedCounters::get, "index"_a)
      .def_prop_ro("attach_path", &SharedCounters::attachPath)
      .def("__len__", &SharedCounters::size);

  nb::class_<RedisShards>(m, "RedisShards",
                          "Redis servers with keys sharded by hash; batched, pipelined MGET/MSET.")
      .def_static("connect", &newRedis, "servers"_a, "password"_a = "", "timeout_s"_a = 5.0,
                  "Connects to every (host, port), AUTH with password when given, then PING.")
      .def_static("available", &RedisShards::available,
                  "Whether this build has the Redis client (hiredis).")
      .def("get_many", &redisGetMany, "keys"_a,
           "Values of keys in order: writable uint8 NumPy arrays over the fetched bytes (no "
           "copy), or None.")
      .def("set_many", &redisSetMany, "items"_a, "Stores (key, bytes) pairs.")
      .def("info", &RedisShards::info, "section"_a, release, "INFO section of every server.")
      .def("key_counts", &RedisShards::keyCounts, release, "DBSIZE of every server.")
      .def("server_of", &RedisShards::serverOf, "key"_a)
      .def_prop_ro("server_count", &RedisShards::serverCount);

  nb::class_<GuardedProcess>(m, "GuardedProcess",
                             "A server process that dies with this one (a watchdog between "
                             "them); its configuration goes through stdin.")
      .def(nb::init<const std::vector<std::string>&, const std::string&, const std::string&>(),
           "argv"_a, "stdin_text"_a, "log_path"_a, release)
      .def_prop_ro("pid", &GuardedProcess::pid)
      .def_prop_ro("watchdog_pid", &GuardedProcess::watchdogPid)
      .def("running", &GuardedProcess::running)
      .def(
          "stop", [](GuardedProcess& p, double timeoutS) { p.stop(seconds(timeoutS)); },
          "timeout_s"_a = 5.0, release, "Kills the server and reaps it and its watchdog.");

  m.def("process_ended", &processEnded, "pid"_a,
        "Whether process pid has ended (absent or a zombie).");
  m.def(
      "cache_key_hash", [](const std::string& key) { return cacheKeyHash(key); }, "key"_a,
      "The 64-bit hash that shards cache keys.");
}

}  // namespace bagua::python
