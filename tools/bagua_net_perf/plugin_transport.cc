// See plugin_transport.h.
#include "tools/bagua_net_perf/plugin_transport.h"

#include <chrono>
#include <cstdint>
#include <sstream>
#include <thread>

#include "tools/plugin_driver/errors.h"
#include "tools/plugin_driver/plugin_logger.h"

namespace bagua::net_perf {

using plugin_driver::DeviceInfo;
using plugin_driver::loadNetPlugin;
using plugin_driver::throwPluginError;
using plugin_driver::TimeoutError;

namespace {

std::string handleKey(int listener, int sender) {
  return "handle." + std::to_string(listener) + ".from." + std::to_string(sender);
}

}  // namespace

PluginTransport::PluginTransport(const PluginTransportParams& params, RunStore& store)
    : params_(params), store_(store), plugin_(loadNetPlugin(params.path, params.abi)) {
  check("init", plugin_->init(params_.commId), "");
  initialized_ = true;
  int ndev = 0;
  check("devices", plugin_->devices(&ndev), "");
  if (ndev < 1 || params_.dev >= ndev) {
    TOOL_THROW(ToolError, "plugin " + plugin_->name() + " reports " + std::to_string(ndev) +
                              " device(s); --dev " + std::to_string(params_.dev) +
                              " does not exist (check NCCL_SOCKET_IFNAME)");
  }
  DeviceInfo info;
  check("getProperties", plugin_->getProperties(params_.dev, &info),
        "dev " + std::to_string(params_.dev));
  if ((info.ptrSupport & NCCL_PTR_HOST) == 0) {
    TOOL_THROW(ToolError, "device " + info.name + " does not support host memory (ptrSupport " +
                              std::to_string(info.ptrSupport) + ")");
  }
  std::ostringstream text;
  text << plugin_->name() << " (v" << plugin_->version() << ") from " << params_.path << ", device "
       << params_.dev << " of " << ndev << ": " << info.name << ", " << info.speedMbps
       << " Mbps, maxRecvs " << info.maxRecvs;
  if (info.maxP2pBytes) text << ", maxP2pBytes " << info.maxP2pBytes;
  description_ = text.str();
}

void PluginTransport::fail(const std::string& call, ncclResult_t result,
                           const std::string& detail) const {
  throwPluginError(call, result, detail);
}

void PluginTransport::connect(const std::vector<int>& sendPeers,
                              const std::vector<int>& recvPeers) {
  int peers = static_cast<int>(sendPeers.size() + recvPeers.size());
  if (params_.flowsPerPeer > 0) {
    check("setNetAttr", plugin_->setNetAttr(peers, params_.flowsPerPeer), "");
  }
  for (int peer : recvPeers) {
    Connection conn{peer};
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    check("listen", plugin_->listen(params_.dev, handle, &conn.listenComm), "");
    if (conn.listenComm == nullptr) fail("listen", ncclInternalError, "returned NULL listenComm");
    store_.put(handleKey(params_.rank, peer), std::string(handle, sizeof(handle)));
    recvs_.push_back(conn);
  }
  for (int peer : sendPeers) {
    Connection conn{peer};
    std::string handle = store_.get(handleKey(peer, params_.rank), peer, "listen handle");
    if (handle.size() != sizeof(conn.handle)) {
      TOOL_THROW(ToolError, "listen handle of rank " + std::to_string(peer) + " has " +
                                std::to_string(handle.size()) + " bytes");
    }
    handle.copy(conn.handle, sizeof(conn.handle));
    sends_.push_back(conn);
  }
  // Both calls are non-blocking: keep polling every pending one, as NCCL's
  // proxy does, so two ranks connecting to each other cannot deadlock.
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + params_.timeout;
  int sleepUs = 10;
  while (true) {
    bool pending = false;
    for (Connection& conn : sends_) {
      if (conn.comm) continue;
      check("connect", plugin_->connect(params_.dev, conn.handle, &conn.comm),
            "to rank " + std::to_string(conn.peer));
      pending |= conn.comm == nullptr;
    }
    for (Connection& conn : recvs_) {
      if (conn.comm) continue;
      check("accept", plugin_->accept(conn.listenComm, &conn.comm),
            "from rank " + std::to_string(conn.peer));
      if (conn.comm) {
        check("closeListen", plugin_->closeListen(conn.listenComm), "");
        conn.listenComm = nullptr;
      }
      pending |= conn.comm == nullptr;
    }
    if (!pending) return;
    if (std::chrono::steady_clock::now() > deadline) {
      std::string what;
      for (const Connection& conn : sends_) {
        if (!conn.comm) what += " connect to rank " + std::to_string(conn.peer) + ";";
      }
      for (const Connection& conn : recvs_) {
        if (!conn.comm) what += " accept from rank " + std::to_string(conn.peer) + ";";
      }
      throw TimeoutError("timed out after " + std::to_string(params_.timeout.count()) +
                         " s; still NULL:" + what);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleepUs));
    sleepUs = sleepUs < 1000 ? sleepUs * 2 : 1000;
  }
}

void* PluginTransport::commFor(std::vector<Connection>& conns, int peer, const char* what) {
  for (Connection& conn : conns) {
    if (conn.peer == peer) return conn.comm;
  }
  TOOL_THROW(ToolError,
             std::string("no ") + what + " connection with rank " + std::to_string(peer));
}

MemHandle* PluginTransport::registerMemory(Direction dir, int peer, void* data, size_t size) {
  void* comm =
      dir == Direction::kSend ? commFor(sends_, peer, "send") : commFor(recvs_, peer, "receive");
  void* mhandle = nullptr;
  check("regMr", plugin_->regMr(comm, data, size, &mhandle), std::to_string(size) + " B");
  registrations_.emplace_back(comm, mhandle);
  return static_cast<MemHandle*>(mhandle);
}

Request* PluginTransport::isend(int peer, void* data, size_t size, MemHandle* memory) {
  void* request = nullptr;
  ncclResult_t result =
      plugin_->isend(commFor(sends_, peer, "send"), data, size, params_.rank, memory, &request);
  if (result != ncclSuccess) {
    fail("isend", result, "to rank " + std::to_string(peer) + ", " + std::to_string(size) + " B");
  }
  return static_cast<Request*>(request);
}

Request* PluginTransport::irecv(int peer, void* data, size_t size, MemHandle* memory) {
  void* request = nullptr;
  ncclResult_t result =
      plugin_->irecv(commFor(recvs_, peer, "receive"), data, size, peer, memory, &request);
  if (result != ncclSuccess) {
    fail("irecv", result, "from rank " + std::to_string(peer) + ", " + std::to_string(size) + " B");
  }
  return static_cast<Request*>(request);
}

bool PluginTransport::test(Request* request, size_t* bytes) {
  int done = 0;
  int size = -1;
  ncclResult_t result = plugin_->test(request, &done, &size);
  if (result != ncclSuccess) fail("test", result, "");
  if (!done) return false;
  // NCCL ignores a send's size; a receive's must be the bytes received, so an
  // untouched (-1) size surfaces as a size mismatch in the pattern's check.
  *bytes = size < 0 ? SIZE_MAX : static_cast<size_t>(size);
  return true;
}

void PluginTransport::close() {
  for (auto& [comm, mhandle] : registrations_)
    check("deregMr", plugin_->deregMr(comm, mhandle), "");
  registrations_.clear();
  for (Connection& conn : sends_) {
    if (conn.comm) check("closeSend", plugin_->closeSend(conn.comm), "");
  }
  for (Connection& conn : recvs_) {
    if (conn.comm) check("closeRecv", plugin_->closeRecv(conn.comm), "");
    if (conn.listenComm) check("closeListen", plugin_->closeListen(conn.listenComm), "");
  }
  sends_.clear();
  recvs_.clear();
  if (initialized_) check("finalize", plugin_->finalize(), "");
  initialized_ = false;
}

}  // namespace bagua::net_perf
