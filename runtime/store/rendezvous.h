// Rendezvous: how the N processes of a job meet. From torchrun's variables
// (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK) rank 0 starts a
// TcpStoreServer on MASTER_PORT, every rank connects a TcpStore to it,
// announces itself and waits for all the others; a rank that never arrives
// gives a TimeoutError naming it. With a store directory (BAGUA_STORE_DIR or
// RendezvousOptions::storeDir) the ranks meet through a FileStore instead,
// for tests and for hosts that share a filesystem. Rank 0 decides the
// outcome and publishes it, so every rank reports the same error, and rank
// 0's server outlives the others' last look at it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/store/store.h"

namespace bagua {

class TcpStoreServer;

struct RendezvousInfo {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;       // rank within the host
  std::string masterAddr;  // where rank 0's store server is reached
  int masterPort = 0;
};

struct RendezvousOptions {
  // Bound on the whole join: connecting to rank 0 and waiting for all ranks.
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  // Key namespace, so several rendezvous can share one store; use a new one
  // for each rendezvous of a job.
  std::string prefix = "default";
  // Non-empty: meet through a FileStore in this directory, not over TCP.
  std::string storeDir;
  // Where rank 0's server listens ("0.0.0.0": every interface).
  std::string bindHost = "0.0.0.0";
};

// Reads RANK, WORLD_SIZE, LOCAL_RANK (optional, default RANK), MASTER_ADDR
// and MASTER_PORT (both optional when BAGUA_STORE_DIR is set); throws
// InvalidArgument naming the variable that is missing, malformed or out of
// range.
RendezvousInfo rendezvousInfoFromEnv();

// Defaults, with storeDir from BAGUA_STORE_DIR and timeout from
// BAGUA_RENDEZVOUS_TIMEOUT_S (seconds) when they are set; throws
// InvalidArgument naming a malformed value (or the old
// BAGUA_RENDEZVOUS_TIMEOUT_MS, which is no longer read).
RendezvousOptions rendezvousOptionsFromEnv();

class Rendezvous {
 public:
  // Joins: returns once every rank of info.worldSize has joined, or throws
  // (TimeoutError naming the missing ranks; InvalidArgument for bad info, a
  // rank that joins twice, or ranks that disagree on the world size;
  // CommError when rank 0 cannot start its server).
  explicit Rendezvous(const RendezvousInfo& info, RendezvousOptions options = {});
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  // The store every rank shares; rank 0's server lives as long as this.
  Store& store() { return *store_; }
  // Who this rank is.
  const RendezvousInfo& info() const { return info_; }
  // The port rank 0's server listens on (0 for a FileStore).
  int serverPort() const;

  // Leaves: every rank marks itself finished, and rank 0 waits for all of
  // them, so its server outlives the others' last requests. Call it on every
  // rank before destroying a Rendezvous whose store was still in use.
  void finish(std::chrono::milliseconds timeout);

 private:
  void join();
  // Rank 0: waits for every rank, checks their world sizes and publishes the
  // verdict; on failure keeps serving until the others have read it.
  void decide();
  // Other ranks: wait for rank 0's verdict and follow it.
  void awaitVerdict();
  // "rendezvous 'p': ranks 2, 3 of 4 did not <verb> within 30 s".
  std::string missingMessage(const std::vector<int>& missing, const std::string& verb) const;
  std::string key(const std::string& what, int rank) const;

  RendezvousInfo info_;
  RendezvousOptions options_;
  std::chrono::steady_clock::time_point deadline_;
  std::unique_ptr<TcpStoreServer> server_;  // rank 0 over TCP only
  std::unique_ptr<Store> store_;            // destroyed before server_
};

}  // namespace bagua
