// ncclTunerPlugin_v2..v6: NCCL's tuner tables, thin shims over
// api/tuner_api.h. NCCL finds them in this library when NCCL_TUNER_PLUGIN is
// not set (a tuner named there replaces ours), newest version it knows first.
#include "net_plugin/api/tuner_api.h"
#include "net_plugin/nccl/tuner.h"

namespace {

using namespace bagua::net;

constexpr const char* kName = "Bagua";

ncclResult_t getV2(void* ctx, ncclFunc_t func, size_t nBytes, int, int, int, int*, int*,
                   int* nChannels) {
  return api::tunerGetCollInfo(ctx, func, nBytes, nChannels);
}
ncclResult_t getV3(void* ctx, ncclFunc_t func, size_t nBytes, int, float**, int, int,
                   int* nChannels) {
  return api::tunerGetCollInfo(ctx, func, nBytes, nChannels);
}
ncclResult_t getV4(void* ctx, ncclFunc_t func, size_t nBytes, int, float**, int, int, int,
                   int* nChannels) {
  return api::tunerGetCollInfo(ctx, func, nBytes, nChannels);
}
ncclResult_t initV5(void** ctx, uint64_t, size_t nRanks, size_t nNodes, ncclDebugLogger_t logger,
                    ncclNvlDomainInfo_v5_t*, ncclTunerConstants_v5_t*) {
  return api::tunerInit(nRanks, nNodes, logger, ctx);
}

}  // namespace

#define BAGUA_TUNER_EXPORT extern "C" __attribute__((visibility("default"))) constinit const

BAGUA_TUNER_EXPORT ncclTuner_v2_t ncclTunerPlugin_v2 = {kName, api::tunerInit, getV2,
                                                        api::tunerFinalize};
BAGUA_TUNER_EXPORT ncclTuner_v3_t ncclTunerPlugin_v3 = {kName, api::tunerInit, getV3,
                                                        api::tunerFinalize};
BAGUA_TUNER_EXPORT ncclTuner_v4_t ncclTunerPlugin_v4 = {kName, api::tunerInit, getV4,
                                                        api::tunerFinalize};
BAGUA_TUNER_EXPORT ncclTuner_v5_t ncclTunerPlugin_v5 = {kName, initV5, getV4, api::tunerFinalize};
BAGUA_TUNER_EXPORT ncclTuner_v6_t ncclTunerPlugin_v6 = {kName, initV5, getV4, api::tunerFinalize,
                                                        nullptr};
