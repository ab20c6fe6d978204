// One adapter template instantiated for ncclNet_v8_t .. ncclNet_v12_t; the
// `if constexpr` branches are exactly the signature differences listed in
// net_plugin/nccl/README.md. Each version's properties struct is read with
// its own field names, never cast to another version's.
#include "tools/plugin_driver/plugin_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <climits>

#include "net_plugin/nccl/net_v10.h"
#include "net_plugin/nccl/net_v11.h"
#include "net_plugin/nccl/net_v12.h"
#include "net_plugin/nccl/net_v8.h"
#include "net_plugin/nccl/net_v9.h"
#include "tools/plugin_driver/errors.h"
#include "tools/plugin_driver/plugin_logger.h"

#ifndef BAGUA_DEFAULT_PLUGIN
#define BAGUA_DEFAULT_PLUGIN ""
#endif
#ifndef BAGUA_INSTALLED_PLUGIN
#define BAGUA_INSTALLED_PLUGIN ""
#endif

namespace bagua::plugin_driver {
namespace {

std::atomic<const char*> gCurrentCall{nullptr};
std::atomic<uint64_t> gCallCount{0};

// Marks the plugin call in progress for the watchdog (relaxed: a hint only).
class CallScope {
 public:
  explicit CallScope(const char* name) {
    gCurrentCall.store(name, std::memory_order_relaxed);
    gCallCount.fetch_add(1, std::memory_order_relaxed);
  }
  ~CallScope() { gCurrentCall.store(nullptr, std::memory_order_relaxed); }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
};

template <typename Table, typename Props, int kVersion>
class TableAdapter final : public NetPlugin {
 public:
  TableAdapter(void* library, const Table* table) : library_(library), t_(table) {}
  ~TableAdapter() override {
    CallScope scope("dlclose");  // runs the plugin's destructors; they must not hang either
    dlclose(library_);
  }

  std::string name() const override { return t_->name ? t_->name : "(null)"; }
  int version() const override { return kVersion; }

  ncclResult_t init(uint64_t commId) override {
    CallScope scope("init");
    if constexpr (kVersion >= 11) {
      config11_.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
      return t_->init(&ctx_, commId, &config11_, pluginLogger, nullptr);
    } else if constexpr (kVersion == 10) {
      (void)commId;
      return t_->init(pluginLogger, nullptr);
    } else {
      (void)commId;
      return t_->init(pluginLogger);
    }
  }

  ncclResult_t devices(int* ndev) override {
    CallScope scope("devices");
    return t_->devices(ndev);
  }

  ncclResult_t getProperties(int dev, DeviceInfo* info) override {
    CallScope scope("getProperties");
    Props props{};
    ncclResult_t result = t_->getProperties(dev, &props);
    if (result != ncclSuccess) return result;
    info->name = props.name ? props.name : "(null)";
    info->ptrSupport = props.ptrSupport;
    info->speedMbps = props.speed;
    info->maxComms = props.maxComms;
    info->maxRecvs = props.maxRecvs;
    if constexpr (kVersion >= 9) info->maxP2pBytes = props.maxP2pBytes;
    if constexpr (kVersion >= 11) info->maxMultiRequestSize = props.maxMultiRequestSize;
    if constexpr (kVersion >= 12) {
      info->railId = props.railId;
      info->planeId = props.planeId;
    }
    return ncclSuccess;
  }

  ncclResult_t setNetAttr(int peers, int flowsPerPeer) override {
    if constexpr (kVersion >= 11) {
      if (t_->setNetAttr == nullptr) return ncclSuccess;
      CallScope scope("setNetAttr");
      ncclNetAttr_v11_t attr{};
      attr.sendCommAttr = {peers, peers, flowsPerPeer, flowsPerPeer};
      attr.recvCommAttr = attr.sendCommAttr;
      return t_->setNetAttr(ctx_, &attr);
    } else {
      (void)peers;
      (void)flowsPerPeer;
      return ncclSuccess;
    }
  }

  ncclResult_t listen(int dev, void* handle, void** listenComm) override {
    CallScope scope("listen");
    if constexpr (kVersion >= 11) {
      return t_->listen(ctx_, dev, handle, listenComm);
    } else {
      return t_->listen(dev, handle, listenComm);
    }
  }

  ncclResult_t connect(int dev, void* handle, void** sendComm) override {
    CallScope scope("connect");
    ncclNetDeviceHandle_t* devComm = nullptr;
    if constexpr (kVersion >= 11) {
      return t_->connect(ctx_, dev, handle, sendComm, &devComm);
    } else if constexpr (kVersion == 10) {
      config10_.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
      return t_->connect(dev, &config10_, handle, sendComm, &devComm);
    } else {
      return t_->connect(dev, handle, sendComm, &devComm);
    }
  }

  ncclResult_t accept(void* listenComm, void** recvComm) override {
    CallScope scope("accept");
    ncclNetDeviceHandle_t* devComm = nullptr;
    return t_->accept(listenComm, recvComm, &devComm);
  }

  ncclResult_t regMr(void* comm, void* data, size_t size, void** mhandle) override {
    CallScope scope("regMr");
    return t_->regMr(comm, data, size, NCCL_PTR_HOST, mhandle);
  }

  ncclResult_t deregMr(void* comm, void* mhandle) override {
    CallScope scope("deregMr");
    return t_->deregMr(comm, mhandle);
  }

  ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                     void** request) override {
    CallScope scope("isend");
    if constexpr (kVersion >= 10) {
      return t_->isend(sendComm, data, size, tag, mhandle, nullptr, request);
    } else if constexpr (kVersion == 9) {
      return t_->isend(sendComm, data, size, tag, mhandle, request);
    } else {
      if (size > INT_MAX) return ncclInvalidArgument;  // v8 sizes are int
      return t_->isend(sendComm, data, static_cast<int>(size), tag, mhandle, request);
    }
  }

  ncclResult_t irecv(void* recvComm, void* data, size_t size, int tag, void* mhandle,
                     void** request) override {
    CallScope scope("irecv");
    void* datas[1] = {data};
    int tags[1] = {tag};
    void* mhandles[1] = {mhandle};
    if constexpr (kVersion >= 9) {
      size_t sizes[1] = {size};
      if constexpr (kVersion >= 10) {
        void* phandles[1] = {nullptr};
        return t_->irecv(recvComm, 1, datas, sizes, tags, mhandles, phandles, request);
      } else {
        return t_->irecv(recvComm, 1, datas, sizes, tags, mhandles, request);
      }
    } else {
      if (size > INT_MAX) return ncclInvalidArgument;
      int sizes[1] = {static_cast<int>(size)};
      return t_->irecv(recvComm, 1, datas, sizes, tags, mhandles, request);
    }
  }

  ncclResult_t test(void* request, int* done, int* size) override {
    CallScope scope("test");
    return t_->test(request, done, size);
  }

  ncclResult_t closeSend(void* sendComm) override {
    CallScope scope("closeSend");
    return t_->closeSend(sendComm);
  }

  ncclResult_t closeRecv(void* recvComm) override {
    CallScope scope("closeRecv");
    return t_->closeRecv(recvComm);
  }

  ncclResult_t closeListen(void* listenComm) override {
    CallScope scope("closeListen");
    return t_->closeListen(listenComm);
  }

  ncclResult_t finalize() override {
    if constexpr (kVersion >= 11) {
      CallScope scope("finalize");
      ncclResult_t result = t_->finalize(ctx_);
      ctx_ = nullptr;
      return result;
    } else {
      return ncclSuccess;
    }
  }

  // Names the first mandatory entry that is NULL (NCCL would crash on it).
  const char* missingEntry() const {
    const std::pair<const char*, bool> entries[] = {
        {"init", t_->init != nullptr},
        {"devices", t_->devices != nullptr},
        {"getProperties", t_->getProperties != nullptr},
        {"listen", t_->listen != nullptr},
        {"connect", t_->connect != nullptr},
        {"accept", t_->accept != nullptr},
        {"regMr", t_->regMr != nullptr},
        {"deregMr", t_->deregMr != nullptr},
        {"isend", t_->isend != nullptr},
        {"irecv", t_->irecv != nullptr},
        {"test", t_->test != nullptr},
        {"closeSend", t_->closeSend != nullptr},
        {"closeRecv", t_->closeRecv != nullptr},
        {"closeListen", t_->closeListen != nullptr},
    };
    for (const auto& [entry, present] : entries) {
      if (!present) return entry;
    }
    if constexpr (kVersion >= 11) {
      if (t_->finalize == nullptr) return "finalize";
    }
    return nullptr;
  }

 private:
  void* library_;
  const Table* t_;
  void* ctx_ = nullptr;
  ncclNetCommConfig_v11_t config11_{};
  ncclNetCommConfig_v10_t config10_{};
};

template <typename Table, typename Props, int kVersion>
std::unique_ptr<NetPlugin> tryTable(void* library, const char* symbol) {
  auto* table = static_cast<const Table*>(dlsym(library, symbol));
  if (table == nullptr) return nullptr;
  auto adapter = std::make_unique<TableAdapter<Table, Props, kVersion>>(library, table);
  if (const char* missing = adapter->missingEntry()) {
    TOOL_THROW(ToolError, std::string(symbol) + "." + missing + " is NULL");
  }
  return adapter;
}

// dlopen(path, RTLD_NOW | RTLD_LOCAL), or ToolError with dlerror()'s text.
void* openLibrary(const std::string& path) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    TOOL_THROW(ToolError, "cannot load plugin: " + std::string(why ? why : path));
  }
  return library;
}

}  // namespace

std::unique_ptr<NetPlugin> loadNetPlugin(const std::string& path, int abi) {
  void* library = openLibrary(path);
  // NCCL tries the newest version first; the first symbol found wins.
  std::unique_ptr<NetPlugin> plugin;
  if (!plugin && (abi == 0 || abi == 12)) {
    plugin = tryTable<ncclNet_v12_t, ncclNetProperties_v12_t, 12>(library, "ncclNetPlugin_v12");
  }
  if (!plugin && (abi == 0 || abi == 11)) {
    plugin = tryTable<ncclNet_v11_t, ncclNetProperties_v11_t, 11>(library, "ncclNetPlugin_v11");
  }
  if (!plugin && (abi == 0 || abi == 10)) {
    plugin = tryTable<ncclNet_v10_t, ncclNetProperties_v10_t, 10>(library, "ncclNetPlugin_v10");
  }
  if (!plugin && (abi == 0 || abi == 9)) {
    plugin = tryTable<ncclNet_v9_t, ncclNetProperties_v9_t, 9>(library, "ncclNetPlugin_v9");
  }
  if (!plugin && (abi == 0 || abi == 8)) {
    plugin = tryTable<ncclNet_v8_t, ncclNetProperties_v8_t, 8>(library, "ncclNetPlugin_v8");
  }
  if (plugin) return plugin;
  dlclose(library);
  TOOL_THROW(ToolError, path + (abi ? " does not export ncclNetPlugin_v" + std::to_string(abi)
                                    : " exports none of ncclNetPlugin_v12, _v11, _v10, _v9, _v8"));
}

std::vector<int> exportedNetVersions(const std::string& path) {
  void* library = openLibrary(path);
  std::vector<int> versions;
  for (int version = 12; version >= 8; --version) {
    std::string symbol = "ncclNetPlugin_v" + std::to_string(version);
    if (dlsym(library, symbol.c_str()) != nullptr) versions.push_back(version);
  }
  dlclose(library);
  return versions;
}

void throwPluginError(const std::string& call, ncclResult_t result, const std::string& detail) {
  std::string warning = lastPluginWarning();
  throw PluginError(
      "plugin " + call + (detail.empty() ? "" : "(" + detail + ")") + " returned " +
      resultName(result) +
      (warning.empty() ? " (no WARN from the plugin)" : "; last plugin WARN: " + warning));
}

std::string resolveDefaultPlugin() {
  for (const char* path : {BAGUA_DEFAULT_PLUGIN, BAGUA_INSTALLED_PLUGIN}) {
    if (path[0] != '\0' && access(path, R_OK) == 0) return path;
  }
  return "libnccl-net-bagua.so";  // left to dlopen's search path
}

std::string resultName(ncclResult_t result) {
  static const char* const kNames[] = {
      "ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
      "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError",
  };
  int code = static_cast<int>(result);
  std::string name = code >= 0 && code < 7 ? kNames[code] : "unknown ncclResult_t";
  return name + " (" + std::to_string(code) + ")";
}

const char* currentPluginCall() { return gCurrentCall.load(std::memory_order_relaxed); }

uint64_t pluginCallCount() { return gCallCount.load(std::memory_order_relaxed); }

}  // namespace bagua::plugin_driver
