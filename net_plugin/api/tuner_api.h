// The tuner's entry points (NCCL's tuner ABI, version-neutral; the tables are
// in abi/tuner_tables.cc) and the channel floor the net plugin's init sets.
// The decisions themselves are tuner/channel_policy.h's.
#pragma once

#include <cstddef>

#include "net_plugin/nccl/tuner.h"
#include "net_plugin/tuner/channel_policy.h"

namespace bagua::net::api {

// The policy from the knobs and the user's NCCL_MIN/MAX_NCHANNELS as the
// process had them before the plugin's first init (read once).
const tuner::Policy& tunerPolicy();

// Called by the net plugin's init: sets NCCL_MIN_NCHANNELS to the floor when
// the policy asks for one and the variable is unset (NCCL reads it once per
// process, after this), with one INFO line saying so.
void applyChannelFloor();

ncclResult_t tunerInit(size_t nRanks, size_t nNodes, ncclDebugLogger_t logger, void** context);
// Sets *nChannels (0: NCCL's own choice); algorithm and protocol are NCCL's.
ncclResult_t tunerGetCollInfo(void* context, ncclFunc_t func, size_t nBytes, int* nChannels);
ncclResult_t tunerFinalize(void* context);

}  // namespace bagua::net::api
