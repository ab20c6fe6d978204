// Interface discovery with getifaddrs(3) and sysfs.
#include "net_plugin/base/devices.h"

#include <ifaddrs.h>
#include <net/if.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "net_plugin/base/ifname_match.h"

namespace bagua::net {
namespace {

bool familyAllowed(int family, const std::string& wanted) {
  if (family != AF_INET && family != AF_INET6) return false;
  if (wanted.empty()) return true;
  return (wanted == "AF_INET") == (family == AF_INET);
}

// Link-local IPv6 addresses need a scope id that only means something on
// this host, so a peer could not use them; ::1 is kept for single-host runs.
bool usableAddress(const sockaddr* sa) {
  if (sa->sa_family != AF_INET6) return true;
  const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
  return !IN6_IS_ADDR_LINKLOCAL(&a);
}

std::string pciPathOf(const std::string& name) {
  std::string link = "/sys/class/net/" + name + "/device";
  char resolved[PATH_MAX];
  if (realpath(link.c_str(), resolved) == nullptr) return "";
  return resolved;
}

std::vector<NetDevice> collect(const IfnameFilter& filter, const Params& params) {
  std::vector<NetDevice> devices;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return devices;
  for (ifaddrs* it = list; it != nullptr && devices.size() < kMaxDevices; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || (it->ifa_flags & IFF_UP) == 0) continue;
    if (!familyAllowed(it->ifa_addr->sa_family, params.socketFamily)) continue;
    if (!usableAddress(it->ifa_addr) || !filter.matches(it->ifa_name)) continue;
    bool seen = false;
    for (const NetDevice& d : devices) seen = seen || d.name == it->ifa_name;
    if (seen) continue;

    NetDevice dev;
    dev.name = it->ifa_name;
    size_t len = it->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&dev.addr, it->ifa_addr, len);
    dev.pciPath = pciPathOf(dev.name);
    int sysfs = readSysfsSpeedMbps(dev.name);
    dev.speedMbps = params.speedMbps > 0 ? params.speedMbps : sysfs > 0 ? sysfs : kDefaultSpeedMbps;
    dev.speedKnown = params.speedMbps > 0 || sysfs > 0;
    devices.push_back(dev);
  }
  freeifaddrs(list);
  return devices;
}

}  // namespace

int readSysfsSpeedMbps(const std::string& name) {
  std::ifstream file("/sys/class/net/" + name + "/speed");
  int speed = -1;
  if (!(file >> speed)) return -1;
  return speed > 0 ? speed : -1;
}

std::vector<NetDevice> discoverDevices(const Params& params) {
  if (!params.socketIfname.empty()) return collect(IfnameFilter(params.socketIfname), params);
  for (const char* spec : {"ib", "^docker,lo,virbr", "docker", "lo"}) {
    std::vector<NetDevice> devices = collect(IfnameFilter(spec), params);
    if (!devices.empty()) return devices;
  }
  return {};
}

}  // namespace bagua::net
