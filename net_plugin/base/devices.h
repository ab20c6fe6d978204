// Network devices: which interfaces the plugin offers NCCL, with the address
// it listens on, its PCI path and speed.
//
// Selection follows NCCL's socket transport: NCCL_SOCKET_IFNAME when set;
// otherwise ib* interfaces, else anything but docker*/lo*/virbr*, else
// docker*, else lo*. NCCL_SOCKET_FAMILY restricts the address family. One
// address per interface (the first usable one); IPv6 link-local addresses
// are skipped, since a peer host cannot reach them with our scope id. At
// most kMaxDevices devices.
#pragma once

#include <string>
#include <vector>

#include "net_plugin/base/params.h"
#include "net_plugin/base/sock_addr.h"

namespace bagua::net {

inline constexpr int kMaxDevices = 16;
// Reported when the NIC does not say (NCCL's socket transport does the same).
inline constexpr int kDefaultSpeedMbps = 10000;

struct NetDevice {
  std::string name;     // interface name, e.g. "eth0"
  SockAddr addr{};      // address to listen on (port 0)
  std::string pciPath;  // realpath of /sys/class/net/IF/device; empty for virtual NICs
  int speedMbps = kDefaultSpeedMbps;
  bool speedKnown = false;  // speedMbps from BAGUA_NET_SPEED_MBPS or sysfs, not the default
};

// Lists the devices the knobs select, in NCCL's order. Empty when none match.
std::vector<NetDevice> discoverDevices(const Params& params);

// Speed of interface `name` from sysfs in Mbit/s, or -1 when it reports none.
int readSysfsSpeedMbps(const std::string& name);

}  // namespace bagua::net
