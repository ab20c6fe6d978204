#include "net_plugin/api/tuner_api.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include "net_plugin/api/boundary.h"
#include "net_plugin/api/process.h"
#include "net_plugin/base/devices.h"
#include "net_plugin/base/params.h"

namespace bagua::net::api {
namespace {

// NCCL treats an empty variable as unset (ncclLoadParam).
bool envSet(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0';
}

struct TunerContext {
  tuner::CommShape comm;
};

// The slowest offered device's known speed in Mbit/s (BAGUA_NET_SPEED_MBPS,
// else sysfs); 0 when no device reports one (lo, many virtual NICs).
int knownLinkMbps() {
  int slowest = 0;
  for (const NetDevice& dev : processState().devices()) {
    if (dev.speedKnown && (slowest == 0 || dev.speedMbps < slowest)) slowest = dev.speedMbps;
  }
  return slowest;
}

}  // namespace

const tuner::Policy& tunerPolicy() {
  // First use is the plugin's init, after the devices are found and before
  // the floor is set, so the user's own NCCL_MIN_NCHANNELS is told apart
  // from ours.
  static const tuner::Policy policy = [] {
    const Params& p = params();
    tuner::Policy out;
    out.enabled = p.tuner != 0;
    out.channels = p.tunerChannels;
    out.rankCpus = processState().usableCpus();
    out.bytesPerChannel = p.tunerChannelBytes;
    out.userChannels = envSet("NCCL_MIN_NCHANNELS") || envSet("NCCL_MAX_NCHANNELS");
    out.linkMbps = knownLinkMbps();
    return out;
  }();
  return policy;
}

void applyChannelFloor() {
  static std::once_flag once;
  std::call_once(once, [] {
    int floor = tuner::channelFloor(tunerPolicy());
    if (floor <= 0) return;
    std::string value = std::to_string(floor);
    // overwrite = 0: never replaces a value that appeared since (NCCL's
    // own nccl.conf loading uses the same rule).
    if (setenv("NCCL_MIN_NCHANNELS", value.c_str(), 0) != 0) {
      BAGUA_WARN("could not set NCCL_MIN_NCHANNELS=%s; NCCL keeps its own channel count",
                 value.c_str());
      return;
    }
    BAGUA_INFO(NCCL_INIT | NCCL_NET,
               "NCCL_MIN_NCHANNELS=%s set by Bagua-Net's tuner (the tuner gives each network "
               "collective the channels its size fills; set NCCL_MIN_NCHANNELS or "
               "NCCL_MAX_NCHANNELS yourself, or BAGUA_NET_TUNER=0, to keep NCCL's)",
               value.c_str());
  });
}

ncclResult_t tunerInit(size_t nRanks, size_t nNodes, ncclDebugLogger_t logger, void** context) {
  return guarded("tunerInit", [&](const char* fn) {
    BAGUA_CHECK_ARG(context != nullptr, "context pointer is NULL");
    *context = nullptr;
    setLogger(logger);
    auto* ctx = new TunerContext{{nRanks, nNodes}};
    BAGUA_INFO(static_cast<unsigned long>(NCCL_INIT) | NCCL_TUNING, "%s", tuner::describe(tunerPolicy(), ctx->comm).c_str());
    *context = ctx;
    return Status::kOk;
  });
}

ncclResult_t tunerGetCollInfo(void* context, ncclFunc_t func, size_t nBytes, int* nChannels) {
  return guarded("tunerGetCollInfo", [&](const char* fn) {
    BAGUA_CHECK_ARG(context != nullptr, "context is NULL");
    BAGUA_CHECK_ARG(nChannels != nullptr, "nChannels is NULL");
    const auto* ctx = static_cast<const TunerContext*>(context);
    int channels = tuner::channelsFor(tunerPolicy(), ctx->comm, func, nBytes);
    if (channels > 0) *nChannels = channels;
    return Status::kOk;
  });
}

ncclResult_t tunerFinalize(void* context) {
  return guarded("tunerFinalize", [&](const char*) {
    delete static_cast<TunerContext*>(context);
    return Status::kOk;
  });
}

}  // namespace bagua::net::api
