// The connects in progress (NCCL's connect() is polled until it returns a
// comm): each Connector is kept between calls under an id that connect()
// writes into NCCL's handle (ListenHandle::connectId), so the next call with
// that handle finds it.
//
// NCCL polls a connect until it returns a comm or fails. One it stops polling
// (a communicator aborted during setup) would keep its sockets until exit, so
// an entry also ends with its v11 context (removeContext), and the next add()
// closes any entry that is past its deadline and has not been polled for
// abandonAfter(). A poll that still comes for a closed entry gets the timeout
// error it would have got (ncclRemoteError). Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "net_plugin/transport/connector.h"

namespace bagua::net {

class PendingConnects {
 public:
  using Clock = Connector::Clock;

  // `connectTimeoutMs`: BAGUA_NET_CONNECT_TIMEOUT_MS, which the connectors
  // added here were given.
  explicit PendingConnects(int connectTimeoutMs) : connectTimeoutMs_(connectTimeoutMs) {}

  // Keeps `connector`, started for the v11 context `ctx` (NULL for older
  // ABIs); returns its id. Closes abandoned entries first.
  uint64_t add(std::unique_ptr<Connector> connector, const void* ctx);
  // nullptr when `id` is unknown (a corrupted handle). Throws the timeout
  // error for a connect closed as abandoned. Shared: another thread's add()
  // may close an entry while its caller is still inside progress().
  std::shared_ptr<Connector> find(uint64_t id);
  // Forgets a connect that finished or failed.
  void remove(uint64_t id);
  // Closes the connects started with `ctx` (NCCL finalizes a context only
  // after its proxy stopped calling connect for it); returns how many.
  size_t removeContext(const void* ctx);
  // Connects in progress.
  size_t size();

 private:
  struct Entry {
    std::shared_ptr<Connector> connector;
    const void* ctx;  // the v11 context, or NULL
    Clock::time_point lastPolled;
  };
  static constexpr size_t kAbandonedKept = 256;  // ids remembered for a late poll

  // How long an entry must be both past its deadline and unpolled before it
  // is closed: the connect timeout, at least 1 s. NCCL polls a live connect
  // continuously, so only a stalled or aborted caller stays away that long.
  std::chrono::milliseconds abandonAfter() const;
  std::vector<std::shared_ptr<Connector>> takeAbandonedLocked(Clock::time_point now);

  const int connectTimeoutMs_;
  std::mutex mutex_;
  std::map<uint64_t, Entry> connectors_;
  std::deque<std::pair<uint64_t, std::string>> abandoned_;
};

}  // namespace bagua::net
