// The tuner's entry points (NCCL's tuner ABI, version-neutral; the tables are
// in abi/tuner_tables.cc) and the channel floor the net plugin's init sets.
// The decisions themselves are tuner/channel_policy.h's.
#pragma once

#include <cstddef>

#include "net_plugin/api/api.h"
#include "net_plugin/nccl/tuner.h"
#include "net_plugin/tuner/channel_policy.h"

namespace bagua::net::api {

// The policy from the knobs, the user's NCCL settings (channels, NCCL_NET,
// NCCL_TUNER_PLUGIN) as the process had them before the plugin's first init,
// and the NCCL version found through `logger` (NCCL's own function) on that
// first call; read once.
const tuner::Policy& tunerPolicy(ncclDebugLogger_t logger = nullptr);

// Called by the net plugin's init with NCCL's logger: sets NCCL_MIN_NCHANNELS
// to the floor when the policy asks for one and the variable is unset or
// empty (NCCL reads it once per process, after this), with one INFO line
// saying so.
void applyChannelFloor(ncclDebugLogger_t logger);

// ncclGetVersion() of the library that holds `ncclCode` (a function of
// NCCL's, e.g. the logger it passes to init), or 0 when that library
// exports none.
int ncclVersionOf(const void* ncclCode);

ncclResult_t tunerInit(size_t nRanks, size_t nNodes, ncclDebugLogger_t logger, void** context);
// Sets *nChannels (0: NCCL's own choice) for NCCL's `algorithm` as far as
// known, and, where tuner/algorithm_policy.h says so, makes Tree LL the
// cheapest entry of NCCL's cost `table` (numAlgo rows of numProto floats;
// NULL for v2, which has none: algorithm and protocol then stay NCCL's).
ncclResult_t tunerGetCollInfo(void* context, ncclFunc_t func, size_t nBytes,
                              tuner::Algorithm algorithm, float* table, int numAlgo, int numProto,
                              int* nChannels);
ncclResult_t tunerFinalize(void* context);

}  // namespace bagua::net::api
