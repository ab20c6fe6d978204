// The plain-TCP baseline: the same patterns over one ordinary blocking TCP
// socket per direction and peer, with a send thread and a receive thread
// (tcp_channel.h), on loopback or the IPv4 address of a chosen interface.
// It is what a plugin must beat; measured in the same run as the plugin.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tools/bagua_net_perf/run_store.h"
#include "tools/bagua_net_perf/tcp_channel.h"
#include "tools/bagua_net_perf/transport.h"

namespace bagua::net_perf {

struct TcpTransportParams {
  int rank = 0;
  std::string ifname;  // "" = first entry of NCCL_SOCKET_IFNAME, else lo
  std::chrono::seconds timeout{60};
};

class TcpTransport final : public Transport {
 public:
  TcpTransport(const TcpTransportParams& params, RunStore& store);
  ~TcpTransport() override;

  std::string describe() const override;
  void connect(const std::vector<int>& sendPeers, const std::vector<int>& recvPeers) override;
  MemHandle* registerMemory(Direction dir, int peer, void* data, size_t size) override;
  Request* isend(int peer, void* data, size_t size, MemHandle* memory) override;
  Request* irecv(int peer, void* data, size_t size, MemHandle* memory) override;
  bool test(Request* request, size_t* bytes) override;
  void close() override;

 private:
  TcpChannel& channel(std::vector<std::unique_ptr<TcpChannel>>& channels, int peer);

  TcpTransportParams params_;
  RunStore& store_;
  std::string ifname_;
  std::string address_;  // dotted IPv4 of ifname_
  std::vector<std::unique_ptr<TcpChannel>> sends_;
  std::vector<std::unique_ptr<TcpChannel>> recvs_;
};

}  // namespace bagua::net_perf
