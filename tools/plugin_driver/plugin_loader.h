// Loading an NCCL net plugin library and driving whichever ABI version it
// exports (v12, else v11, v10, v9, v8: the first found wins, as in NCCL) through
// one small interface. This is the ABI layer: the only place where the
// plugin's tables, void* comms and ncclResult_t codes are seen; callers
// check every result (plugin_transport.cc turns them into exceptions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net_plugin/nccl/net_types.h"

namespace bagua::plugin_driver {

// The properties of a device that the tool uses or prints (a subset common
// to all versions; each version's own struct is read field by field).
struct DeviceInfo {
  std::string name;
  int ptrSupport = 0;
  int speedMbps = 0;
  int maxComms = 0;
  int maxRecvs = 0;
  size_t maxP2pBytes = 0;       // 0 when the version has no such field
  int maxMultiRequestSize = 0;  // v11+; 0 before
  std::optional<int> railId;    // v12+ (-1: undefined); none before
  std::optional<int> planeId;   // v12+ (-1: undefined); none before
};

// One plugin function table, whatever its version. Arguments as in v11/v12; the
// adapters narrow sizes for v8 (int) and add the arguments older or newer
// versions need (configs, profiler handles, context).
class NetPlugin {
 public:
  virtual ~NetPlugin() = default;
  // The table's name field ("Bagua").
  virtual std::string name() const = 0;
  // ABI version of the table found: 8 to 12.
  virtual int version() const = 0;
  // init with our logger (v11+: per communicator, commId and trafficClass -1).
  virtual ncclResult_t init(uint64_t commId) = 0;
  // Number of devices.
  virtual ncclResult_t devices(int* ndev) = 0;
  // Properties of device dev.
  virtual ncclResult_t getProperties(int dev, DeviceInfo* info) = 0;
  // v11+ setNetAttr hints (peers, flows per peer); no-op where absent.
  virtual ncclResult_t setNetAttr(int peers, int flowsPerPeer) = 0;
  // Receiving side: opens a listener; handle is NCCL_NET_HANDLE_MAXSIZE bytes.
  virtual ncclResult_t listen(int dev, void* handle, void** listenComm) = 0;
  // Sending side: non-blocking; *sendComm stays NULL until connected.
  virtual ncclResult_t connect(int dev, void* handle, void** sendComm) = 0;
  // Non-blocking; *recvComm stays NULL until a connection is accepted.
  virtual ncclResult_t accept(void* listenComm, void** recvComm) = 0;
  // Registers host memory for use on comm.
  virtual ncclResult_t regMr(void* comm, void* data, size_t size, void** mhandle) = 0;
  // Releases a registration.
  virtual ncclResult_t deregMr(void* comm, void* mhandle) = 0;
  // Starts a send; *request NULL means "try again later".
  virtual ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                             void** request) = 0;
  // Starts one receive (n = 1); *request NULL means "try again later".
  virtual ncclResult_t irecv(void* recvComm, void* data, size_t size, int tag, void* mhandle,
                             void** request) = 0;
  // Polls a request; *size gets the bytes moved once *done.
  virtual ncclResult_t test(void* request, int* done, int* size) = 0;
  // Closes a send comm.
  virtual ncclResult_t closeSend(void* sendComm) = 0;
  // Closes a receive comm.
  virtual ncclResult_t closeRecv(void* recvComm) = 0;
  // Closes a listener.
  virtual ncclResult_t closeListen(void* listenComm) = 0;
  // v11+ finalize of the context from init; no-op for older versions.
  virtual ncclResult_t finalize() = 0;
};

// dlopen(path, RTLD_NOW | RTLD_LOCAL) and find the newest table (or exactly
// version abi, 8 to 12, when abi is not 0); throws ToolError with dlerror()
// text when the library or the symbol is missing. The library is dlclosed
// when the returned object is destroyed.
std::unique_ptr<NetPlugin> loadNetPlugin(const std::string& path, int abi);

// The versions of the ncclNetPlugin_vN tables (8 to 12) the library at
// `path` exports, newest first; throws ToolError when it cannot be loaded.
std::vector<int> exportedNetVersions(const std::string& path);

// The plugin to load when none is named: this build's, then the installed
// one, then the bare name for dlopen's search path.
std::string resolveDefaultPlugin();

// "ncclSystemError (2)".
std::string resultName(ncclResult_t result);

// Throws PluginError "plugin CALL(DETAIL) returned RESULT; last plugin WARN: ...".
[[noreturn]] void throwPluginError(const std::string& call, ncclResult_t result,
                                   const std::string& detail);

// throwPluginError unless result is ncclSuccess.
inline void checkPluginCall(const std::string& call, ncclResult_t result,
                            const std::string& detail) {
  if (result != ncclSuccess) throwPluginError(call, result, detail);
}

// The plugin call in progress in this process (nullptr between calls), for the
// watchdog's report when a call never returns.
const char* currentPluginCall();

// Number of plugin calls started in this process; a watchdog that sees it
// stand still while currentPluginCall() is set knows a call never returned.
uint64_t pluginCallCount();

}  // namespace bagua::plugin_driver
