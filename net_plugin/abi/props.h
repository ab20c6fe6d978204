// Copies the version-neutral properties into one version's struct, field by
// field by name: the layouts differ (v8 has no forceFlush, v9+ append vProps
// and the byte limits, v11 maxMultiRequestSize, v12 widens vProps and
// appends railId/planeId), so one version's struct is never cast to
// another's.
#pragma once

#include <type_traits>

#include "net_plugin/api/api.h"
#include "net_plugin/nccl/net_v12.h"

namespace bagua::net::abi {

// Fields every version from v8 on has.
template <typename Props>
void fillCommon(const api::DeviceProps& p, int dev, Props* out) {
  out->name = p.name;
  out->pciPath = p.pciPath;
  out->guid = p.guid;
  out->ptrSupport = p.ptrSupport;
  out->regIsGlobal = 0;
  out->speed = p.speedMbps;
  out->port = p.port;
  out->latency = p.latency;
  out->maxComms = p.maxComms;
  out->maxRecvs = p.maxRecvs;
  out->netDeviceType = NCCL_NET_DEVICE_HOST;
  out->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  if constexpr (requires { out->maxP2pBytes; }) {  // v9+
    out->forceFlush = 0;
    out->vProps.ndevs = 1;
    out->vProps.devs[0] = dev;
    out->maxP2pBytes = p.maxP2pBytes;
    out->maxCollBytes = p.maxCollBytes;
  }
  if constexpr (requires { out->maxMultiRequestSize; }) {  // v11+
    out->maxMultiRequestSize = 1;                          // no multi-request sends
  }
  if constexpr (requires { out->railId; }) {  // v12+: NCCL ignores undefined ids
    out->railId = NCCL_NET_ID_UNDEF;
    out->planeId = NCCL_NET_ID_UNDEF;
  }
}

}  // namespace bagua::net::abi
