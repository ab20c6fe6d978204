#include "net_plugin/tuner/channel_policy.h"

#include <algorithm>
#include <cstdio>

namespace bagua::net::tuner {

int mostChannels(const Policy& policy) {
  int most = std::max(policy.channels, 2);
  if (policy.linkMbps > 0) most = std::min(most, std::max(policy.linkMbps / kMbpsPerChannel, 2));
  return most;
}

int channelFloor(const Policy& policy) {
  if (!policy.enabled || policy.userChannels) return 0;
  int most = mostChannels(policy);
  return most > 2 ? most : 0;
}

bool tunes(const Policy& policy, const CommShape& comm) {
  return channelFloor(policy) > 0 && comm.nNodes > 1;
}

int channelsFor(const Policy& policy, const CommShape& comm, ncclFunc_t func, size_t nBytes) {
  if (!tunes(policy, comm)) return 0;
  if (func != ncclFuncBroadcast && func != ncclFuncReduce && func != ncclFuncAllGather &&
      func != ncclFuncReduceScatter && func != ncclFuncAllReduce) {
    return 0;  // point to point and newer collectives: NCCL's own
  }
  if (nBytes < kSmallBytes) return 0;
  size_t per = std::max<size_t>(policy.bytesPerChannel, 1);
  size_t wanted = (nBytes + per - 1) / per;
  return static_cast<int>(
      std::clamp<size_t>(wanted, 2, static_cast<size_t>(mostChannels(policy))));
}

std::string describe(const Policy& policy, const CommShape& comm) {
  char line[256];
  if (!policy.enabled) {
    std::snprintf(line, sizeof line, "tuner off (BAGUA_NET_TUNER=0): NCCL's own channels");
  } else if (policy.userChannels) {
    std::snprintf(line, sizeof line,
                  "tuner leaves channels to NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS set by the user");
  } else if (channelFloor(policy) == 0) {
    std::snprintf(line, sizeof line,
                  "tuner leaves channels to NCCL: a %d Mbit/s link is filled by NCCL's own 2 "
                  "(one channel per %d Mbit/s)",
                  policy.linkMbps, kMbpsPerChannel);
  } else if (comm.nNodes <= 1) {
    std::snprintf(line, sizeof line,
                  "tuner leaves a communicator of %zu ranks on one node to NCCL", comm.nRanks);
  } else {
    std::snprintf(line, sizeof line,
                  "tuner: %zu ranks on %zu nodes; collectives of >= %zu bytes get one channel "
                  "per %zu bytes, 2..%d%s",
                  comm.nRanks, comm.nNodes, kSmallBytes, policy.bytesPerChannel,
                  mostChannels(policy),
                  policy.linkMbps > 0 ? " (capped by the link's speed)" : "");
  }
  return line;
}

}  // namespace bagua::net::tuner
