// API boundary, setup half: init and contexts, devices and properties,
// listen/connect/accept and the closes.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "net_plugin/api/api.h"
#include "net_plugin/api/boundary.h"
#include "net_plugin/api/registry.h"
#include "net_plugin/transport/connector.h"
#include "net_plugin/transport/listener.h"
#include "net_plugin/transport/plugin_state.h"
#include "net_plugin/transport/recv_comm.h"
#include "net_plugin/transport/send_comm.h"
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
  int target = params().flowsPerPeer;
  int flows = ctx != nullptr ? ctx->flowsPerPeer.load(std::memory_order_relaxed) : 0;
  if (target <= 0 || flows <= 0) return most;
  return std::clamp((target + flows - 1) / flows, 1, most);
}

// connect() state between calls, keyed by the id written into the handle.
//
// NCCL polls a connect until it returns a comm or fails. One it stops polling
// (a communicator aborted during setup) would keep its sockets until exit, so
// an entry also ends with its v11 context (finalizeContext), and the
// process's next connect() closes any entry that is past its deadline and has
// not been polled for abandonAfter(). A poll that still comes for a closed
// entry gets the timeout error it would have got (ncclRemoteError).
class PendingConnects {
 public:
  using Clock = Connector::Clock;

  static PendingConnects& get() {
    static PendingConnects pending;
    return pending;
  }
  uint64_t add(std::unique_ptr<Connector> connector, const void* ctx) {
    std::vector<std::shared_ptr<Connector>> closed;
    uint64_t id = randomToken();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed = takeAbandonedLocked(Clock::now());
      connectors_[id] = Entry{std::move(connector), ctx, Clock::now()};
    }
    for (const auto& c : closed) {
      BAGUA_INFO(NCCL_NET,
                 "closed an abandoned connect to %s (not polled for %lld ms past its "
                 "BAGUA_NET_CONNECT_TIMEOUT_MS deadline)",
                 c->peer().c_str(), static_cast<long long>(abandonAfter().count()));
    }
    return id;  // `closed` releases the sockets here, outside the lock
  }
  // nullptr when `id` is unknown (a corrupted handle). Throws the timeout
  // error for a connect closed as abandoned. Shared: another thread's add()
  // may close an entry while its caller is still inside progress().
  std::shared_ptr<Connector> find(uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = connectors_.find(id);
    if (it != connectors_.end()) {
      it->second.lastPolled = Clock::now();
      return it->second.connector;
    }
    for (const auto& [closedId, peer] : abandoned_) {
      if (closedId == id) {
        throw NetError(Status::kRemoteError,
                       "could not connect to " + peer + " within " +
                           std::to_string(params().connectTimeoutMs) +
                           " ms (BAGUA_NET_CONNECT_TIMEOUT_MS); the connect was closed as "
                           "abandoned after it went unpolled");
      }
    }
    return nullptr;
  }
  void remove(uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    connectors_.erase(id);
  }
  // Closes the connects started with `ctx` (NCCL finalizes a context only
  // after its proxy stopped calling connect for it); returns how many.
  size_t removeContext(const void* ctx) {
    std::vector<std::shared_ptr<Connector>> closed;  // released after the lock
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(connectors_, [&](const auto& e) {
      if (e.second.ctx != ctx) return false;
      closed.push_back(e.second.connector);
      return true;
    });
    return closed.size();
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return connectors_.size();
  }

 private:
  struct Entry {
    std::shared_ptr<Connector> connector;
    const void* ctx;  // the v11 context, or NULL
    Clock::time_point lastPolled;
  };
  static constexpr size_t kAbandonedKept = 256;  // ids remembered for a late poll

  // How long an entry must be both past its deadline and unpolled before it
  // is closed: the connect timeout, at least 1 s. NCCL polls a live connect
  // continuously, so only a stalled or aborted caller stays away that long.
  static std::chrono::milliseconds abandonAfter() {
    return std::max(std::chrono::milliseconds(params().connectTimeoutMs),
                    std::chrono::milliseconds(1000));
  }

  std::vector<std::shared_ptr<Connector>> takeAbandonedLocked(Clock::time_point now) {
    std::vector<std::shared_ptr<Connector>> closed;
    auto grace = abandonAfter();
    for (auto it = connectors_.begin(); it != connectors_.end();) {
      const Entry& e = it->second;
      if (now > e.connector->deadline() + grace && now > e.lastPolled + grace) {
        abandoned_.emplace_back(it->first, e.connector->peer());
        if (abandoned_.size() > kAbandonedKept) abandoned_.pop_front();
        closed.push_back(e.connector);
        it = connectors_.erase(it);
      } else {
        ++it;
      }
    }
    return closed;
  }

  std::mutex mutex_;
  std::map<uint64_t, Entry> connectors_;
  std::deque<std::pair<uint64_t, std::string>> abandoned_;
};

int deviceCount() { return static_cast<int>(PluginState::get().devices().size()); }

}  // namespace

ncclResult_t init(ncclDebugLogger_t logger) {
  return guarded("init", [&](const char*) {
    PluginState::get().init(logger);
    return Status::kOk;
  });
}

ncclResult_t initContext(void** ctx, uint64_t commId, int trafficClass, ncclDebugLogger_t logger) {
  return guarded("init", [&](const char* fn) {
    BAGUA_CHECK_ARG(ctx != nullptr, "context pointer is NULL");
    *ctx = nullptr;
    PluginState::get().init(logger);
    auto context = std::make_unique<Context>();
    context->commId = commId;
    context->trafficClass = trafficClass;
    context->engine = PluginState::get().engine();
    context->limiter = PluginState::makeLimiter();
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
    if (size_t n = PendingConnects::get().removeContext(ctx); n > 0) {
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
    int flows = attr->sendCommAttr.maxFlowsPerPeer;
    if (flows > 0 && context->flowsPerPeer.exchange(flows) != flows && params().flowsPerPeer > 0) {
      BAGUA_INFO(
          NCCL_NET,
          "setNetAttr: %d connections per peer; new connections open %d streams "
          "(BAGUA_NET_FLOWS_PER_PEER=%d, BAGUA_NET_STREAMS=%d)",
          flows,
          std::clamp((params().flowsPerPeer + flows - 1) / flows, 1, streamsToOpen(params())),
          params().flowsPerPeer, params().streams);
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
    const NetDevice& d = PluginState::get().devices()[static_cast<size_t>(dev)];
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
    auto comm = std::make_unique<ListenComm>(PluginState::get().devices()[static_cast<size_t>(dev)],
                                             streamsToOpen(params()));
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
      std::shared_ptr<RateLimiter> limiter =
          context != nullptr ? context->limiter : PluginState::get().processLimiter();
      h->connectId = PendingConnects::get().add(
          std::make_unique<Connector>(*h, streamsFor(*h, context), limiter), ctx);
    }
    std::shared_ptr<Connector> connector = PendingConnects::get().find(h->connectId);
    BAGUA_CHECK_ARG(connector != nullptr,
                    "handle names an unknown connect in progress (corrupted, or its context "
                    "was finalized)");
    std::unique_ptr<SendComm> comm;
    try {
      comm = connector->progress();
    } catch (...) {
      PendingConnects::get().remove(h->connectId);
      h->connectId = 0;
      throw;
    }
    if (!comm) return Status::kOk;  // not yet: NCCL calls again
    PendingConnects::get().remove(h->connectId);
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
    if (params().zeroCopy != ZeroCopyMode::kOff) {
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

size_t pendingConnects() { return PendingConnects::get().size(); }

}  // namespace bagua::net::api
