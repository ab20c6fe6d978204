// API boundary, setup half: init and contexts, devices and properties,
// listen/connect/accept and the closes.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "net_plugin/api/api.h"
#include "net_plugin/api/boundary.h"
#include "net_plugin/api/process.h"
#include "net_plugin/api/registry.h"
#include "net_plugin/api/tuner_api.h"
#include "net_plugin/transport/connector.h"
#include "net_plugin/transport/listener.h"
#include "net_plugin/transport/recv_comm.h"
#include "net_plugin/transport/send_comm.h"
#include "net_plugin/transport/stream_tuner.h"
#include "net_plugin/transport/zero_copy_stats.h"

namespace bagua::net::api {
namespace {

// A v11 per-communicator context.
struct Context {
  uint64_t commId = 0;
  int trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
  std::shared_ptr<Engine> engine;        // keeps workers alive for the communicator's life
  std::shared_ptr<RateLimiter> limiter;  // this rank's send-rate cap, or NULL
  // NCCL's latest setNetAttr: connections it runs to each peer (0: no hint).
  std::atomic<int> flowsPerPeer{0};
};

// Streams for a new connection: BAGUA_NET_STREAMS (the listener's count),
// or fewer when BAGUA_NET_FLOWS_PER_PEER is set and NCCL said how many
// connections run to the peer in parallel.
int streamsFor(const ListenHandle& handle, const Context* ctx) {
  int most = handle.nStreams;
  int target = processState().params().flowsPerPeer;
  int flows = ctx != nullptr ? ctx->flowsPerPeer.load(std::memory_order_relaxed) : 0;
  if (target <= 0 || flows <= 0) return most;
  return std::clamp((target + flows - 1) / flows, 1, most);
}

int deviceCount() { return static_cast<int>(processState().devices().size()); }

}  // namespace

ncclResult_t init(ncclDebugLogger_t logger) {
  return guarded("init", [&](const char*) {
    setLogger(logger);  // first: a malformed knob is reported through NCCL's logger
    processState().init();
    applyChannelFloor(logger);
    return Status::kOk;
  });
}

ncclResult_t initContext(void** ctx, uint64_t commId, int trafficClass, ncclDebugLogger_t logger) {
  return guarded("init", [&](const char* fn) {
    BAGUA_CHECK_ARG(ctx != nullptr, "context pointer is NULL");
    *ctx = nullptr;
    setLogger(logger);
    PluginState& state = processState();
    state.init();
    applyChannelFloor(logger);
    auto context = std::make_unique<Context>();
    context->commId = commId;
    context->trafficClass = trafficClass;
    context->engine = state.engine();
    context->limiter = state.makeLimiter();
    Registry::get().add(context.get(), ObjectKind::kContext);
    *ctx = context.release();
    return Status::kOk;
  });
}

ncclResult_t finalizeContext(void* ctx) {
  return guarded("finalize", [&](const char* fn) {
    if (ctx == nullptr) return Status::kOk;  // NCCL 2.28 finalizes after a failed init
    BAGUA_CHECK_ARG(Registry::get().is(ctx, ObjectKind::kContext), "unknown context %p", ctx);
    Registry::get().remove(ctx);
    if (size_t n = processConnects().removeContext(ctx); n > 0) {
      BAGUA_INFO(NCCL_NET, "closed %zu connect(s) of the finalized context still in progress", n);
    }
    delete static_cast<Context*>(ctx);
    return Status::kOk;
  });
}

ncclResult_t setNetAttr(void* ctx, const ncclNetAttr_v11_t* attr) {
  return guarded("setNetAttr", [&](const char* fn) {
    BAGUA_CHECK_ARG(Registry::get().is(ctx, ObjectKind::kContext), "unknown context %p", ctx);
    BAGUA_CHECK_ARG(attr != nullptr, "attributes are NULL");
    BAGUA_TRACE_LOG("setNetAttr: send peers %d..%d flows %d..%d, op %u algo %u proto %u",
                    attr->sendCommAttr.minConcurrentPeers, attr->sendCommAttr.maxConcurrentPeers,
                    attr->sendCommAttr.minFlowsPerPeer, attr->sendCommAttr.maxFlowsPerPeer,
                    attr->op, attr->algo, attr->proto);
    auto* context = static_cast<Context*>(ctx);
    const Params& p = processState().params();
    int flows = attr->sendCommAttr.maxFlowsPerPeer;
    if (flows > 0 && context->flowsPerPeer.exchange(flows) != flows && p.flowsPerPeer > 0) {
      BAGUA_INFO(NCCL_NET,
                 "setNetAttr: %d connections per peer; new connections open %d streams "
                 "(BAGUA_NET_FLOWS_PER_PEER=%d, BAGUA_NET_STREAMS=%d)",
                 flows, std::clamp((p.flowsPerPeer + flows - 1) / flows, 1, streamsToOpen(p)),
                 p.flowsPerPeer, p.streams);
    }
    return Status::kOk;
  });
}

ncclResult_t devices(int* ndev) {
  return guarded("devices", [&](const char* fn) {
    BAGUA_CHECK_ARG(ndev != nullptr, "ndev is NULL");
    *ndev = deviceCount();
    return Status::kOk;
  });
}

ncclResult_t getProperties(int dev, DeviceProps* props) {
  return guarded("getProperties", [&](const char* fn) {
    BAGUA_CHECK_ARG(props != nullptr, "props is NULL");
    BAGUA_CHECK_ARG(dev >= 0 && dev < deviceCount(), "device %d (the plugin has %d)", dev,
                    deviceCount());
    const NetDevice& d = processState().devices()[static_cast<size_t>(dev)];
    props->name = const_cast<char*>(d.name.c_str());
    props->pciPath = d.pciPath.empty() ? nullptr : const_cast<char*>(d.pciPath.c_str());
    props->guid = static_cast<uint64_t>(dev);
    props->ptrSupport = NCCL_PTR_HOST;
    props->speedMbps = d.speedMbps;
    props->port = 0;
    props->latency = 0;
    props->maxComms = 65536;
    props->maxRecvs = 1;
    props->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
    props->maxCollBytes = NCCL_MAX_NET_SIZE_BYTES;
    return Status::kOk;
  });
}

ncclResult_t listen(int dev, void* handle, void** listenComm) {
  return guarded("listen", [&](const char* fn) {
    BAGUA_CHECK_ARG(handle != nullptr && listenComm != nullptr, "handle or listenComm is NULL");
    *listenComm = nullptr;
    BAGUA_CHECK_ARG(dev >= 0 && dev < deviceCount(), "device %d (the plugin has %d)", dev,
                    deviceCount());
    PluginState& state = processState();
    auto comm = std::make_unique<ListenComm>(state.devices()[static_cast<size_t>(dev)],
                                             streamsToOpen(state.params()), state.params(),
                                             processEngine());
    std::memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
    std::memcpy(handle, &comm->handle(), sizeof(ListenHandle));
    Registry::get().add(comm.get(), ObjectKind::kListen);
    *listenComm = comm.release();
    return Status::kOk;
  });
}

ncclResult_t connect(void* ctx, int dev, void* handle, void** sendComm) {
  return guarded("connect", [&](const char* fn) {
    BAGUA_CHECK_ARG(handle != nullptr && sendComm != nullptr, "handle or sendComm is NULL");
    *sendComm = nullptr;
    BAGUA_CHECK_ARG(dev >= 0 && dev < deviceCount(), "device %d (the plugin has %d)", dev,
                    deviceCount());
    auto* h = static_cast<ListenHandle*>(handle);
    std::string why;
    BAGUA_CHECK_ARG(checkListenHandle(*h, &why), "%s", why.c_str());
    if (h->connectId == 0) {
      BAGUA_CHECK_ARG(ctx == nullptr || Registry::get().is(ctx, ObjectKind::kContext),
                      "unknown context %p", ctx);
      auto* context = static_cast<Context*>(ctx);
      PluginState& state = processState();
      std::shared_ptr<RateLimiter> limiter =
          context != nullptr ? context->limiter : state.processLimiter();
      // The connection starts sending on as many streams as the link needs
      // (all when its speed is unknown); the adaptive rule moves from there.
      const NetDevice& device = state.devices()[static_cast<size_t>(dev)];
      int initialStreams = initialStreamCount(state.params().streams,
                                            device.speedKnown ? device.speedMbps : 0);
      h->connectId = processConnects().add(
          std::make_unique<Connector>(*h, streamsFor(*h, context), initialStreams,
                                      state.callerStream(), limiter, state.params(),
                                      processEngine()),
          ctx);
    }
    std::shared_ptr<Connector> connector = processConnects().find(h->connectId);
    BAGUA_CHECK_ARG(connector != nullptr,
                    "handle names an unknown connect in progress (corrupted, or its context "
                    "was finalized)");
    std::unique_ptr<SendComm> comm;
    try {
      comm = connector->progress();
    } catch (...) {
      processConnects().remove(h->connectId);
      h->connectId = 0;
      throw;
    }
    if (!comm) return Status::kOk;  // not yet: NCCL calls again
    processConnects().remove(h->connectId);
    h->connectId = 0;
    Registry::get().add(comm.get(), ObjectKind::kSend);
    *sendComm = comm.release();
    return Status::kOk;
  });
}

ncclResult_t accept(void* listenComm, void** recvComm) {
  return guarded("accept", [&](const char* fn) {
    BAGUA_CHECK_ARG(recvComm != nullptr, "recvComm is NULL");
    *recvComm = nullptr;
    BAGUA_CHECK_ARG(Registry::get().is(listenComm, ObjectKind::kListen), "unknown listenComm %p",
                    listenComm);
    std::unique_ptr<RecvComm> comm = static_cast<ListenComm*>(listenComm)->accept();
    if (!comm) return Status::kOk;
    Registry::get().add(comm.get(), ObjectKind::kRecv);
    *recvComm = comm.release();
    return Status::kOk;
  });
}

ncclResult_t closeSend(void* sendComm) {
  return guarded("closeSend", [&](const char* fn) {
    BAGUA_CHECK_ARG(Registry::get().is(sendComm, ObjectKind::kSend), "unknown sendComm %p",
                    sendComm);
    Registry::get().remove(sendComm);
    auto* comm = static_cast<SendComm*>(sendComm);
    if (comm->close()) delete comm;  // else leaked: a worker may still use it
    if (processState().params().zeroCopy != ZeroCopyMode::kOff) {
      const ZeroCopyStats& zc = zeroCopyStats();
      BAGUA_INFO(NCCL_NET,
                 "zero-copy so far in this process: %llu sends, %llu released, %llu of "
                 "them copied by the kernel anyway",
                 static_cast<unsigned long long>(zc.sends.load()),
                 static_cast<unsigned long long>(zc.notifications.load()),
                 static_cast<unsigned long long>(zc.copied.load()));
    }
    return Status::kOk;
  });
}

ncclResult_t closeRecv(void* recvComm) {
  return guarded("closeRecv", [&](const char* fn) {
    BAGUA_CHECK_ARG(Registry::get().is(recvComm, ObjectKind::kRecv), "unknown recvComm %p",
                    recvComm);
    Registry::get().remove(recvComm);
    auto* comm = static_cast<RecvComm*>(recvComm);
    if (comm->close()) delete comm;  // else leaked: a worker may still use it
    return Status::kOk;
  });
}

ncclResult_t closeListen(void* listenComm) {
  return guarded("closeListen", [&](const char* fn) {
    BAGUA_CHECK_ARG(Registry::get().is(listenComm, ObjectKind::kListen), "unknown listenComm %p",
                    listenComm);
    Registry::get().remove(listenComm);
    delete static_cast<ListenComm*>(listenComm);
    return Status::kOk;
  });
}

size_t pendingConnects() { return processConnects().size(); }

}  // namespace bagua::net::api
