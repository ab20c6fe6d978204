// ncclTunerPlugin_v2..v6: NCCL's tuner tables, thin shims over
// api/tuner_api.h. NCCL finds them in this library when NCCL_TUNER_PLUGIN is
// not set (a tuner named there replaces ours), newest version it knows first.
#include "net_plugin/api/tuner_api.h"
#include "net_plugin/nccl/tuner.h"

namespace {

using namespace bagua::net;

constexpr const char* kName = api::kNetName;

// v2 has no cost table: where CollNet or NVLS may run, NCCL keeps its channels.
ncclResult_t getV2(void* ctx, ncclFunc_t func, size_t nBytes, int collNetSupport,
                   int nvlsSupport, int, int*, int*, int* nChannels) {
  auto algorithm = collNetSupport != 0 || nvlsSupport != 0 ? tuner::Algorithm::kOther
                                                           : tuner::Algorithm::kUnknown;
  return api::tunerGetCollInfo(ctx, func, nBytes, algorithm, nullptr, 0, 0, nChannels);
}
// The table NCCL hands over is float[numAlgo][numProto] cast to float**.
tuner::Algorithm algorithmOf(float** table, int numAlgo, int numProto) {
  return tuner::winningAlgorithm(reinterpret_cast<const float*>(table), numAlgo, numProto);
}
ncclResult_t getV3(void* ctx, ncclFunc_t func, size_t nBytes, int, float** table, int numAlgo,
                   int numProto, int* nChannels) {
  return api::tunerGetCollInfo(ctx, func, nBytes, algorithmOf(table, numAlgo, numProto),
                               reinterpret_cast<float*>(table), numAlgo, numProto, nChannels);
}
ncclResult_t getV4(void* ctx, ncclFunc_t func, size_t nBytes, int, float** table, int numAlgo,
                   int numProto, int, int* nChannels) {
  return api::tunerGetCollInfo(ctx, func, nBytes, algorithmOf(table, numAlgo, numProto),
                               reinterpret_cast<float*>(table), numAlgo, numProto, nChannels);
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
