// What the measurement loops need from a way of moving bytes between ranks:
// one send connection per destination, one receive connection per source,
// registered memory and asynchronous requests polled to completion. Two
// implementations: PluginTransport (any NCCL net plugin, plugin_transport.h)
// and TcpTransport (the plain-TCP baseline, tcp_baseline.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace bagua::net_perf {

// Opaque handles owned by the transport that issued them.
struct Request;
struct MemHandle;

enum class Direction { kSend, kRecv };

class Transport {
 public:
  virtual ~Transport() = default;
  // One line for the report header (plugin name, ABI version, device).
  virtual std::string describe() const = 0;
  // Opens a send connection to each of sendPeers and a receive connection from
  // each of recvPeers; returns when all are up, throws on error or timeout.
  virtual void connect(const std::vector<int>& sendPeers, const std::vector<int>& recvPeers) = 0;
  // Registers [data, data + size) for the connection in dir with peer.
  virtual MemHandle* registerMemory(Direction dir, int peer, void* data, size_t size) = 0;
  // Starts sending size bytes to peer; nullptr means "not now, call again".
  virtual Request* isend(int peer, void* data, size_t size, MemHandle* memory) = 0;
  // Starts receiving up to size bytes from peer; nullptr means "call again".
  virtual Request* irecv(int peer, void* data, size_t size, MemHandle* memory) = 0;
  // True once request is complete (it is then released); *bytes = bytes moved.
  virtual bool test(Request* request, size_t* bytes) = 0;
  // Deregisters memory and closes every connection (and the plugin context).
  virtual void close() = 0;
};

}  // namespace bagua::net_perf
