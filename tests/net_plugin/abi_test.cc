// The shipped library, driven through each exported ABI table exactly as
// NCCL drives it: dlopen, init, devices, getProperties, listen in one
// process, non-blocking connect/accept loops across two processes over
// loopback, regMr, isend/irecv/test with every byte checked, closes,
// finalize, dlclose. Also: unload and reload in one process, and worker
// threads gone before dlclose.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "net_plugin/nccl/net_v12.h"
#include "tests/net_plugin/support/patterns.h"
#include "tests/net_plugin/support/pipe.h"
#include "tools/plugin_driver/plugin_loader.h"

namespace bagua::net::testing {
namespace {

using namespace std::chrono_literals;

using plugin_driver::DeviceInfo;
using plugin_driver::loadNetPlugin;
using plugin_driver::NetPlugin;

const std::vector<size_t> kSizes = {0, 1, 4095, 65536, (1u << 20) + 3, 8u << 20};

// Polls until *comm is set by `step`, which returns an ncclResult_t.
template <typename Step>
bool pollUntil(void** comm, Step step) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (*comm == nullptr && std::chrono::steady_clock::now() < deadline) {
    if (step() != ncclSuccess) return false;
  }
  return *comm != nullptr;
}

bool waitDone(NetPlugin& p, void* req, int* size) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  int done = 0;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    if (p.test(req, &done, size) != ncclSuccess) return false;
  }
  return done != 0;
}

// The receiving rank, in a child process. Exit code says what failed.
int receiver(int abi, Pipe& handles) {
  auto plugin = loadNetPlugin(BAGUA_PLUGIN_PATH, abi);
  if (plugin->version() != abi || plugin->name() != "Bagua") return 10;
  if (plugin->init(42) != ncclSuccess) return 11;
  void* listenComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  if (plugin->listen(0, handle, &listenComm) != ncclSuccess) return 12;
  handles.write(handle, sizeof(handle));
  void* recvComm = nullptr;
  if (!pollUntil(&recvComm, [&] { return plugin->accept(listenComm, &recvComm); })) return 13;
  std::vector<uint8_t> buf((8u << 20) + 64);
  void* mr = nullptr;
  if (plugin->regMr(recvComm, buf.data(), buf.size(), &mr) != ncclSuccess) return 14;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    void* req = nullptr;
    if (plugin->irecv(recvComm, buf.data(), buf.size(), 0, mr, &req) != ncclSuccess || !req) {
      return 15;
    }
    int got = -1;
    if (!waitDone(*plugin, req, &got)) return 16;
    if (static_cast<size_t>(got) != kSizes[i]) return 17;
    if (verifyPattern(buf.data(), kSizes[i], 100 + i) != -1) return 18;
  }
  if (plugin->deregMr(recvComm, mr) != ncclSuccess) return 19;
  if (plugin->closeRecv(recvComm) != ncclSuccess) return 20;
  if (plugin->closeListen(listenComm) != ncclSuccess) return 21;
  if (plugin->finalize() != ncclSuccess) return 22;
  return 0;
}

class AbiVersion : public ::testing::TestWithParam<int> {};

TEST_P(AbiVersion, TwoProcessesExchangeVerifiedDataThroughThisTable) {
  const int abi = GetParam();
  int threadsBefore = pluginThreadCount();
  Pipe handles;
  ChildProcess child([&] { return receiver(abi, handles); });

  auto plugin = loadNetPlugin(BAGUA_PLUGIN_PATH, abi);
  ASSERT_EQ(plugin->version(), abi);
  ASSERT_EQ(plugin->init(43), ncclSuccess);
  int ndev = 0;
  ASSERT_EQ(plugin->devices(&ndev), ncclSuccess);
  ASSERT_GE(ndev, 1);
  DeviceInfo info;
  ASSERT_EQ(plugin->getProperties(0, &info), ncclSuccess);
  EXPECT_EQ(info.name, "lo");
  EXPECT_EQ(info.ptrSupport, NCCL_PTR_HOST);
  EXPECT_EQ(info.maxRecvs, 1);
  EXPECT_GT(info.speedMbps, 0);
  if (abi >= 9) {
    EXPECT_GT(info.maxP2pBytes, 0u);
    EXPECT_LE(info.maxP2pBytes, NCCL_MAX_NET_SIZE_BYTES) << "NCCL rejects more than 1 TiB";
  }
  if (abi >= 11) {
    EXPECT_EQ(info.maxMultiRequestSize, 1);
  }
  if (abi >= 12) {
    // The driver zeroes the struct first: -1 was written by the plugin.
    ASSERT_TRUE(info.railId.has_value() && info.planeId.has_value());
    EXPECT_EQ(*info.railId, NCCL_NET_ID_UNDEF);
    EXPECT_EQ(*info.planeId, NCCL_NET_ID_UNDEF);
  }

  char handle[NCCL_NET_HANDLE_MAXSIZE];
  ASSERT_TRUE(handles.read(handle, sizeof(handle), 20s));
  void* sendComm = nullptr;
  ASSERT_TRUE(pollUntil(&sendComm, [&] { return plugin->connect(0, handle, &sendComm); }));
  std::vector<uint8_t> buf(8u << 20);
  void* mr = nullptr;
  ASSERT_EQ(plugin->regMr(sendComm, buf.data(), buf.size(), &mr), ncclSuccess);
  for (size_t i = 0; i < kSizes.size(); ++i) {
    fillPattern(buf.data(), kSizes[i], 100 + i);
    void* req = nullptr;
    ASSERT_EQ(plugin->isend(sendComm, buf.data(), kSizes[i], 0, mr, &req), ncclSuccess);
    ASSERT_NE(req, nullptr);
    int size = 0;
    ASSERT_TRUE(waitDone(*plugin, req, &size)) << "message " << i;
  }
  EXPECT_EQ(child.wait(30s), 0) << "receiver exit code: see receiver() for its meaning";
  EXPECT_EQ(plugin->deregMr(sendComm, mr), ncclSuccess);
  EXPECT_EQ(plugin->closeSend(sendComm), ncclSuccess);
  EXPECT_EQ(plugin->finalize(), ncclSuccess);
  EXPECT_EQ(pluginThreadCountSettled(threadsBefore), threadsBefore)
      << "plugin threads must be gone before NCCL dlcloses";
  plugin.reset();  // dlclose
}

INSTANTIATE_TEST_SUITE_P(Versions, AbiVersion, ::testing::Values(8, 9, 10, 11, 12),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

// One in-process link through `plugin`: returns false on any failure.
bool loopbackRoundTrip(NetPlugin& plugin) {
  void* listenComm = nullptr;
  void* sendComm = nullptr;
  void* recvComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  if (plugin.listen(0, handle, &listenComm) != ncclSuccess) return false;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while ((!sendComm || !recvComm) && std::chrono::steady_clock::now() < deadline) {
    if (!sendComm && plugin.connect(0, handle, &sendComm) != ncclSuccess) return false;
    if (!recvComm && plugin.accept(listenComm, &recvComm) != ncclSuccess) return false;
  }
  std::vector<uint8_t> out(1 << 20), in(1 << 20);
  fillPattern(out.data(), out.size(), 9);
  void* rreq = nullptr;
  void* sreq = nullptr;
  int size = 0;
  bool ok = plugin.irecv(recvComm, in.data(), in.size(), 0, nullptr, &rreq) == ncclSuccess &&
            plugin.isend(sendComm, out.data(), out.size(), 0, nullptr, &sreq) == ncclSuccess &&
            waitDone(plugin, sreq, &size) && waitDone(plugin, rreq, &size) &&
            verifyPattern(in.data(), in.size(), 9) == -1;
  ok = plugin.closeSend(sendComm) == ncclSuccess && ok;
  ok = plugin.closeRecv(recvComm) == ncclSuccess && ok;
  return plugin.closeListen(listenComm) == ncclSuccess && ok;
}

TEST(Unload, ReloadAfterDlcloseWorks) {
  int threadsBefore = pluginThreadCount();
  for (int round = 0; round < 3; ++round) {
    auto plugin = loadNetPlugin(BAGUA_PLUGIN_PATH, 12);
    ASSERT_EQ(plugin->init(static_cast<uint64_t>(round)), ncclSuccess);
    EXPECT_TRUE(loopbackRoundTrip(*plugin)) << "round " << round;
    ASSERT_EQ(plugin->finalize(), ncclSuccess);
    EXPECT_EQ(pluginThreadCountSettled(threadsBefore), threadsBefore) << "round " << round;
    plugin.reset();  // dlclose, as NCCL 2.28 does after its last communicator
    // Linked with -z nodelete: the code stays mapped (no per-load leak of the
    // static libstdc++'s pool), with no plugin thread left running in it.
    void* resident = dlopen(BAGUA_PLUGIN_PATH, RTLD_NOW | RTLD_NOLOAD);
    EXPECT_NE(resident, nullptr) << "expected the library to stay resident (-z nodelete)";
    if (resident != nullptr) dlclose(resident);
  }
}

TEST(Unload, OldVersionsStopThreadsWithTheirLastComm) {
  // v8-v10 have no finalize: the last close must end the workers.
  int threadsBefore = pluginThreadCount();
  auto plugin = loadNetPlugin(BAGUA_PLUGIN_PATH, 10);
  ASSERT_EQ(plugin->init(1), ncclSuccess);
  EXPECT_TRUE(loopbackRoundTrip(*plugin));
  EXPECT_EQ(pluginThreadCountSettled(threadsBefore), threadsBefore);
}

TEST(Load, NewestTableIsV12) {
  auto plugin = loadNetPlugin(BAGUA_PLUGIN_PATH, 0);
  EXPECT_EQ(plugin->version(), 12) << "NCCL 2.30+ looks for ncclNetPlugin_v12 first";
}

TEST(Symbols, OnlyPluginTablesAreExported) {
  void* lib = dlopen(BAGUA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  for (const char* sym : {"ncclNetPlugin_v12", "ncclNetPlugin_v11", "ncclNetPlugin_v10",
                          "ncclNetPlugin_v9", "ncclNetPlugin_v8"}) {
    EXPECT_NE(dlsym(lib, sym), nullptr) << sym;
  }
  // dlsym(handle) also searches the library's dependencies (a sanitizer
  // runtime pulls in libstdc++), so check where a found symbol lives.
  for (const char* sym : {"io_uring_queue_init", "io_uring_submit", "_ZSt4cout"}) {
    void* addr = dlsym(lib, sym);
    Dl_info info{};
    if (addr != nullptr && dladdr(addr, &info) != 0 && info.dli_fname != nullptr) {
      EXPECT_STRNE(info.dli_fname, BAGUA_PLUGIN_PATH) << sym << " leaks out of the plugin";
    }
  }
  dlclose(lib);
}

}  // namespace
}  // namespace bagua::net::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  signal(SIGPIPE, SIG_IGN);
  return RUN_ALL_TESTS();
}
