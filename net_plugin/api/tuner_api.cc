#include "net_plugin/api/tuner_api.h"

#include <dlfcn.h>
#include <link.h>
#include <strings.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "net_plugin/api/boundary.h"
#include "net_plugin/api/process.h"
#include "net_plugin/base/devices.h"
#include "net_plugin/base/params.h"
#include "net_plugin/tuner/algorithm_policy.h"

namespace bagua::net::api {
namespace {

// NCCL treats an empty variable as unset (ncclLoadParam).
bool envSet(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0';
}

// Set and not empty, and not `ours` (compared as NCCL does, ignoring case).
bool envNamesOther(const char* name, const char* ours) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' && strcasecmp(value, ours) != 0;
}

// NCCL_TUNER_PLUGIN names a tuner other than ours: "none", or a library
// whose name does not mention Bagua (ours is libnccl-net-bagua.so).
bool otherTunerNamed() {
  const char* value = std::getenv("NCCL_TUNER_PLUGIN");
  if (value == nullptr || value[0] == '\0') return false;
  std::string lower(value);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("bagua") == std::string::npos;
}

// With NCCL_TUNER_PLUGIN unset NCCL loads libnccl-tuner.so from the library
// search path and looks in the net plugin's library only when there is none
// (src/plugin/plugin_open.cc, 2.21 to 2.30). Under that other tuner our floor
// would give every collective all its channels, with nothing of ours to lower
// them again (16 channels made 128-512 KiB messages 2-4x slower). True when
// such a library loads, as NCCL loads it, and is not this one (a link to ours).
bool anotherDefaultTunerLoads() {
  const char* value = std::getenv("NCCL_TUNER_PLUGIN");
  if (value != nullptr && value[0] != '\0') return false;  // NCCL tries the named one instead
  void* lib = dlopen("libnccl-tuner.so", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    dlerror();  // clear it
    return false;
  }
  bool ours = false;
  link_map* map = nullptr;
  Dl_info self{};
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      dladdr(reinterpret_cast<void*>(&anotherDefaultTunerLoads), &self) != 0 &&
      self.dli_fname != nullptr) {
    char* theirs = realpath(map->l_name, nullptr);
    char* mine = realpath(self.dli_fname, nullptr);
    ours = theirs != nullptr && mine != nullptr && std::strcmp(theirs, mine) == 0;
    std::free(theirs);
    std::free(mine);
  }
  dlclose(lib);
  return !ours;
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

int ncclVersionOf(const void* ncclCode) {
  Dl_info info{};
  if (ncclCode == nullptr || dladdr(ncclCode, &info) == 0 || info.dli_fname == nullptr) return 0;
  // Already loaded (it called us): RTLD_NOLOAD only takes a reference. A
  // program linked with NCCL statically names itself here, where dlsym
  // finds ncclGetVersion if the program exports it.
  void* nccl = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (nccl == nullptr) return 0;
  using GetVersion = int (*)(int*);  // ncclResult_t ncclGetVersion(int*); 0 is ncclSuccess
  auto getVersion = reinterpret_cast<GetVersion>(dlsym(nccl, "ncclGetVersion"));
  int version = 0;
  if (getVersion == nullptr || getVersion(&version) != 0) version = 0;
  dlclose(nccl);
  return version;
}

const tuner::Policy& tunerPolicy(ncclDebugLogger_t logger) {
  // First use is the plugin's init, after the devices are found and before
  // the floor is set, so the user's own NCCL_MIN_NCHANNELS is told apart
  // from ours; the logger NCCL passes there is NCCL's own function.
  static const tuner::Policy policy = [logger] {
    const Params& p = params();
    tuner::Policy out;
    out.enabled = p.tuner != 0;
    out.channels = p.tunerChannels;
    out.rankCpus = processState().usableCpus();
    out.bytesPerChannel = p.tunerChannelBytes;
    out.userChannels = false;
    out.userAlgorithm = envSet("NCCL_ALGO") || envSet("NCCL_PROTO");
    for (const char* name : {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS",
                             "NCCL_MAX_CTAS", "NCCL_MIN_NRINGS", "NCCL_MAX_NRINGS"}) {
      out.userChannels = out.userChannels || envSet(name);
    }
    out.otherNetwork = envNamesOther("NCCL_NET", kNetName);
    out.otherTuner = otherTunerNamed() || anotherDefaultTunerLoads();
    out.ncclVersion = ncclVersionOf(reinterpret_cast<const void*>(logger));
    out.linkMbps = knownLinkMbps();
    return out;
  }();
  return policy;
}

void applyChannelFloor(ncclDebugLogger_t logger) {
  static std::once_flag once;
  std::call_once(once, [logger] {
    const tuner::Policy& policy = tunerPolicy(logger);
    int floor = tuner::channelFloor(policy);
    if (floor <= 0) {
      // Why, as a communicator across nodes would be told.
      BAGUA_INFO(NCCL_INIT | NCCL_NET, "no channel floor: %s",
                 tuner::describe(policy, tuner::CommShape{2, 2}).c_str());
      return;
    }
    std::string value = std::to_string(floor);
    // overwrite = 0: never replaces a value that appeared since (NCCL's
    // own nccl.conf loading uses the same rule); but an empty one, which
    // NCCL ignores as unset, is replaced.
    const char* now = std::getenv("NCCL_MIN_NCHANNELS");
    int overwrite = now != nullptr && now[0] == '\0' ? 1 : 0;
    if (setenv("NCCL_MIN_NCHANNELS", value.c_str(), overwrite) != 0) {
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
    // NCCL runs the net plugin's init before it loads the tuner; without it
    // (NCCL 2.30+ with NCCL_NET naming another network) Bagua-Net carries
    // nothing of this communicator.
    auto* ctx = new TunerContext{{nRanks, nNodes, processState().initialized()}};
    BAGUA_INFO(static_cast<unsigned long>(NCCL_INIT) | NCCL_TUNING, "%s", tuner::describe(tunerPolicy(), ctx->comm).c_str());
    if (tuner::picksAlgorithm(tunerPolicy(), ctx->comm)) {
      BAGUA_INFO(static_cast<unsigned long>(NCCL_INIT) | NCCL_TUNING,
                 "tuner: all_reduce of <= %zu bytes on Tree LL where NCCL picks Ring LL (2 ranks "
                 "on 2 nodes; NCCL_ALGO or NCCL_PROTO keeps NCCL's)",
                 tuner::kTreeMostBytes);
    }
    *context = ctx;
    return Status::kOk;
  });
}

ncclResult_t tunerGetCollInfo(void* context, ncclFunc_t func, size_t nBytes,
                              tuner::Algorithm algorithm, float* table, int numAlgo, int numProto,
                              int* nChannels) {
  return guarded("tunerGetCollInfo", [&](const char* fn) {
    BAGUA_CHECK_ARG(context != nullptr, "context is NULL");
    BAGUA_CHECK_ARG(nChannels != nullptr, "nChannels is NULL");
    const auto* ctx = static_cast<const TunerContext*>(context);
    tuner::preferTreeLL(tunerPolicy(), ctx->comm, func, nBytes, table, numAlgo, numProto);
    int channels = tuner::channelsFor(tunerPolicy(), ctx->comm, func, nBytes, algorithm);
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
