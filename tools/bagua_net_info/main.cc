// bagua-net-info: what an NCCL net plugin sees on this machine, without NCCL
// or a GPU. Loads the plugin as NCCL would (newest ABI table first), prints
// its devices and their properties, then opens one loopback connection from
// a device to itself, so the plugin starts its engine and says, in its own
// INFO lines, which engine it chose (io_uring, or epoll and why), how many
// worker threads, the spin and the streams per connection. The answer to
// "what will Bagua-Net do here, with this environment?" before a job runs.
//
// Exit status: 0 when the plugin loaded, found a device and connected;
// 1 naming the call that failed (with the plugin's last WARN); 2 for a bad
// command line.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "tools/plugin_driver/errors.h"
#include "tools/plugin_driver/plugin_loader.h"
#include "tools/plugin_driver/plugin_logger.h"

namespace bagua::net_info {

using plugin_driver::checkPluginCall;
using plugin_driver::DeviceInfo;
using plugin_driver::exportedNetVersions;
using plugin_driver::kExitOk;
using plugin_driver::loadNetPlugin;
using plugin_driver::NetPlugin;
using plugin_driver::resolveDefaultPlugin;
using plugin_driver::setupPluginLogger;

namespace {

struct InfoOptions {
  std::string plugin;
  int abi = 0;
  int dev = 0;
  bool connect = true;
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: bagua-net-info [--plugin PATH] [--abi 8..12] [--dev D] [--no-connect]\n"
               "\n"
               "Loads an NCCL net plugin (default: this build's libnccl-net-bagua.so) and\n"
               "prints the ABI tables it exports, the one used (the newest, as NCCL picks,\n"
               "or --abi's), its devices and their properties, then connects\n"
               "device D (default 0) to itself over its own address and prints the plugin's\n"
               "INFO lines (engine, worker threads, spin, streams). The plugin reads its knobs\n"
               "(BAGUA_NET_*, NCCL_SOCKET_IFNAME, ...) from this environment, as in a job.\n");
}

InfoOptions parse(int argc, char** argv) {
  InfoOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) TOOL_THROW(UsageError, arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--plugin") {
      o.plugin = value();
    } else if (arg == "--abi") {
      o.abi = std::atoi(value().c_str());
      if (o.abi < 8 || o.abi > 12) TOOL_THROW(UsageError, "--abi takes 8, 9, 10, 11 or 12");
    } else if (arg == "--dev") {
      o.dev = std::atoi(value().c_str());
      if (o.dev < 0) TOOL_THROW(UsageError, "--dev takes a device index >= 0");
    } else if (arg == "--no-connect") {
      o.connect = false;
    } else if (arg == "-h" || arg == "--help") {
      usage(stdout);
      std::exit(kExitOk);
    } else {
      TOOL_THROW(UsageError, "unknown argument " + arg);
    }
  }
  if (o.plugin.empty()) o.plugin = resolveDefaultPlugin();
  return o;
}

void check(const char* call, ncclResult_t result) { checkPluginCall(call, result, ""); }

void printDevices(NetPlugin& plugin, int* ndev) {
  check("devices", plugin.devices(ndev));
  std::printf("%s: ncclNetPlugin_v%d, %d device(s)\n", plugin.name().c_str(), plugin.version(),
              *ndev);
  for (int d = 0; d < *ndev; ++d) {
    DeviceInfo info;
    check("getProperties", plugin.getProperties(d, &info));
    std::printf("  [%d] %s: %d Mbit/s, ptrSupport%s%s, maxComms %d, maxRecvs %d", d,
                info.name.c_str(), info.speedMbps, (info.ptrSupport & NCCL_PTR_HOST) ? " host" : "",
                (info.ptrSupport & NCCL_PTR_CUDA) ? " cuda" : "", info.maxComms, info.maxRecvs);
    if (info.maxP2pBytes != 0) std::printf(", maxP2pBytes %zu", info.maxP2pBytes);
    if (info.railId) std::printf(", rail %d, plane %d", *info.railId, *info.planeId);
    std::printf("\n");
  }
}

// Listens on `dev`, connects to that listener and accepts, polling both
// non-blocking calls as NCCL's proxy does, then closes everything.
void connectToSelf(NetPlugin& plugin, int dev) {
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  void* listenComm = nullptr;
  void* sendComm = nullptr;
  void* recvComm = nullptr;
  check("listen", plugin.listen(dev, handle, &listenComm));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (sendComm == nullptr || recvComm == nullptr) {
    if (sendComm == nullptr) check("connect", plugin.connect(dev, handle, &sendComm));
    if (recvComm == nullptr) check("accept", plugin.accept(listenComm, &recvComm));
    if (std::chrono::steady_clock::now() > deadline) {
      TOOL_THROW(TimeoutError, "device " + std::to_string(dev) +
                                   " could not connect to itself within 10 s (firewall, or an "
                                   "address other hosts cannot reach either?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::printf("device %d connected to itself\n", dev);
  check("closeSend", plugin.closeSend(sendComm));
  check("closeRecv", plugin.closeRecv(recvComm));
  check("closeListen", plugin.closeListen(listenComm));
}

int run(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // in order with the plugin's lines on stderr
  InfoOptions o = parse(argc, argv);
  setenv("NCCL_DEBUG", "INFO", 0);  // the plugin's INFO lines are the point
  setupPluginLogger(0);
  std::unique_ptr<NetPlugin> plugin = loadNetPlugin(o.plugin, o.abi);
  std::printf("plugin: %s\n", o.plugin.c_str());
  std::string tables;
  for (int version : exportedNetVersions(o.plugin)) {
    tables += (tables.empty() ? "" : ", ") + std::string("v") + std::to_string(version);
  }
  std::printf("exports ncclNetPlugin: %s\n", tables.c_str());
  check("init", plugin->init(0));
  int ndev = 0;
  printDevices(*plugin, &ndev);
  if (ndev == 0) TOOL_THROW(ToolError, "no devices (check NCCL_SOCKET_IFNAME)");
  if (o.dev >= ndev) TOOL_THROW(UsageError, "--dev " + std::to_string(o.dev) + " does not exist");
  if (o.connect) connectToSelf(*plugin, o.dev);
  check("finalize", plugin->finalize());
  return kExitOk;
}

}  // namespace
}  // namespace bagua::net_info

int main(int argc, char** argv) {
  using namespace bagua::plugin_driver;
  try {
    return bagua::net_info::run(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "bagua-net-info: %s (see --help)\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bagua-net-info: %s\n", e.what());
    return kExitError;
  }
}
