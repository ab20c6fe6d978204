#include "net_plugin/tuner/channel_policy.h"

#include <algorithm>
#include <cstdio>

namespace bagua::net::tuner {

namespace {

// The link's cap (at least 2), or 0 when its speed is unknown.
int linkCap(const Policy& policy) {
  return policy.linkMbps > 0 ? std::max(policy.linkMbps / kMbpsPerChannel, 2) : 0;
}

// A known link that NCCL's own 2 channels fill: the tuner stays out.
bool linkFilledByTwo(const Policy& policy) {
  int cap = linkCap(policy);
  return cap > 0 && cap <= 2;
}

// The automatic floor gives a rank of few CPUs NCCL's own 2: the tuner stays out.
bool cpusFilledByTwo(const Policy& policy) {
  return policy.channels == 0 && floorChannels(policy) <= 2;
}

// An NCCL that will not load this tuner (2.20).
bool ncclWithoutOurTuner(const Policy& policy) {
  return policy.ncclVersion > 0 && policy.ncclVersion < kFirstNcclWithNetPluginTuner;
}

// NCCL's code for version X.Y.Z (from 2.9): X * 10000 + Y * 100 + Z.
std::string versionText(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

}  // namespace

int floorChannels(const Policy& policy) {
  if (policy.channels > 0) return policy.channels;
  if (policy.rankCpus > 0) return std::clamp(policy.rankCpus, 2, kAutoChannels);
  return kAutoChannels;
}

int mostChannels(const Policy& policy) {
  int most = std::max(floorChannels(policy), 2);
  int cap = linkCap(policy);
  return cap > 0 ? std::min(most, cap) : most;
}

int channelFloor(const Policy& policy) {
  if (!policy.enabled || policy.userChannels || policy.otherNetwork || policy.otherTuner ||
      ncclWithoutOurTuner(policy) || linkFilledByTwo(policy) || cpusFilledByTwo(policy)) {
    return 0;
  }
  int cap = linkCap(policy);
  return cap > 0 ? std::min(floorChannels(policy), cap) : floorChannels(policy);
}

bool tunes(const Policy& policy, const CommShape& comm) {
  return channelFloor(policy) > 0 && comm.viaBagua && comm.nNodes > 1;
}

Algorithm winningAlgorithm(const float* table, int numAlgo, int numProto) {
  if (table == nullptr || numAlgo <= 0 || numProto <= 0) return Algorithm::kUnknown;
  int best = -1;
  float bestTime = 0;
  for (int a = 0; a < numAlgo; ++a) {
    for (int p = 0; p < numProto; ++p) {
      float time = table[a * numProto + p];
      if (time >= 0 && (best < 0 || time < bestTime)) {
        best = a;
        bestTime = time;
      }
    }
  }
  if (best < 0) return Algorithm::kUnknown;
  return best == NCCL_ALGO_TREE || best == NCCL_ALGO_RING ? Algorithm::kTreeOrRing
                                                          : Algorithm::kOther;
}

int channelsFor(const Policy& policy, const CommShape& comm, ncclFunc_t func, size_t nBytes,
                Algorithm algorithm) {
  if (!tunes(policy, comm) || algorithm == Algorithm::kOther) return 0;
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
                  "tuner leaves channels to the user's NCCL_MIN/MAX_NCHANNELS, NCCL_MIN/MAX_CTAS "
                  "or NCCL_MIN/MAX_NRINGS");
  } else if (policy.otherNetwork || !comm.viaBagua) {
    std::snprintf(line, sizeof line,
                  "tuner leaves channels to NCCL: Bagua-Net is not this communicator's network "
                  "(NCCL_NET names another, or the plugin's init did not run)");
  } else if (policy.otherTuner) {
    std::snprintf(line, sizeof line,
                  "tuner leaves channels to NCCL: another tuner is NCCL's (NCCL_TUNER_PLUGIN names "
                  "one, or a libnccl-tuner.so is on the library path)");
  } else if (ncclWithoutOurTuner(policy)) {
    std::snprintf(line, sizeof line,
                  "tuner leaves channels to NCCL: NCCL %s loads no tuner from a net plugin "
                  "(2.21 and later do)",
                  versionText(policy.ncclVersion).c_str());
  } else if (linkFilledByTwo(policy)) {
    std::snprintf(line, sizeof line,
                  "tuner leaves channels to NCCL: a %d Mbit/s link is filled by NCCL's own 2 "
                  "(one channel per %d Mbit/s)",
                  policy.linkMbps, kMbpsPerChannel);
  } else if (cpusFilledByTwo(policy)) {
    std::snprintf(line, sizeof line,
                  "tuner leaves channels to NCCL: this rank's share of %d CPUs is served best by "
                  "NCCL's own 2 (one channel per CPU, at most %d)",
                  policy.rankCpus, kAutoChannels);
  } else if (comm.nNodes <= 1) {
    std::snprintf(line, sizeof line,
                  "tuner leaves a communicator of %zu ranks on one node to NCCL", comm.nRanks);
  } else {
    char why[96] = "";
    if (policy.linkMbps > 0 && linkCap(policy) < floorChannels(policy)) {
      std::snprintf(why, sizeof why, " (capped by the link's %d Mbit/s: one per %d)",
                    policy.linkMbps, kMbpsPerChannel);
    } else if (policy.channels == 0 && floorChannels(policy) < kAutoChannels) {
      std::snprintf(why, sizeof why, " (one per CPU of this rank's share)");
    }
    std::snprintf(line, sizeof line,
                  "tuner: %zu ranks on %zu nodes; collectives of >= %zu bytes get one channel "
                  "per %zu bytes, 2..%d%s",
                  comm.nRanks, comm.nNodes, kSmallBytes, policy.bytesPerChannel,
                  mostChannels(policy), why);
  }
  return line;
}

}  // namespace bagua::net::tuner
