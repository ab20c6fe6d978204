// Transport over an NCCL net plugin, calling it in NCCL's order: init,
// devices, getProperties, listen on the receiving side, the handle to the
// peer through the file store, connect/accept polled until non-NULL (and the
// listener closed right after accept, as NCCL's net transport does), regMr,
// isend/irecv/test, deregMr, closeSend/closeRecv, finalize.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net_plugin/nccl/net_types.h"
#include "tools/bagua_net_perf/run_store.h"
#include "tools/bagua_net_perf/transport.h"
#include "tools/plugin_driver/plugin_loader.h"

namespace bagua::net_perf {

struct PluginTransportParams {
  std::string path;  // library to load
  int abi = 0;       // 0: newest table found; 8..12: exactly that one
  int rank = 0;
  int dev = 0;           // device index
  int flowsPerPeer = 0;  // > 0: setNetAttr hints before connect/accept
  uint64_t commId = 0;   // same on every rank of a run, as NCCL's comm hash
  std::chrono::seconds timeout{60};
};

class PluginTransport final : public Transport {
 public:
  // Loads the library and runs init, devices and getProperties; throws on error.
  PluginTransport(const PluginTransportParams& params, RunStore& store);

  std::string describe() const override { return description_; }
  void connect(const std::vector<int>& sendPeers, const std::vector<int>& recvPeers) override;
  MemHandle* registerMemory(Direction dir, int peer, void* data, size_t size) override;
  Request* isend(int peer, void* data, size_t size, MemHandle* memory) override;
  Request* irecv(int peer, void* data, size_t size, MemHandle* memory) override;
  bool test(Request* request, size_t* bytes) override;
  void close() override;

 private:
  struct Connection {
    int peer;
    void* comm = nullptr;
    void* listenComm = nullptr;                 // receive side, until accepted
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};  // send side: the peer's listen handle
  };

  void* commFor(std::vector<Connection>& conns, int peer, const char* what);
  [[noreturn]] void fail(const std::string& call, ncclResult_t result,
                         const std::string& detail) const;
  void check(const std::string& call, ncclResult_t result, const std::string& detail) const {
    if (result != ncclSuccess) fail(call, result, detail);
  }

  PluginTransportParams params_;
  RunStore& store_;
  std::unique_ptr<plugin_driver::NetPlugin> plugin_;
  std::string description_;
  std::vector<Connection> sends_;
  std::vector<Connection> recvs_;
  std::vector<std::pair<void*, void*>> registrations_;  // (comm, mhandle)
  bool initialized_ = false;
};

}  // namespace bagua::net_perf
