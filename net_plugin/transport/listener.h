// The listening side of connection setup (NCCL's listen/accept).
//
// accept() never blocks: each call accepts whatever connections are waiting,
// reads what has arrived of their hellos, and returns a RecvComm once every
// stream of one connecting peer has presented the right token. Connections
// with a wrong token, garbage, or no hello within the handshake timeout are
// closed and logged; the listener keeps serving. One listener may accept
// any number of peers (each sender has its own connection id).
#pragma once

#include <cstdint>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "net_plugin/base/devices.h"
#include "net_plugin/base/socket_util.h"
#include "net_plugin/transport/recv_comm.h"
#include "net_plugin/transport/wire.h"

namespace bagua::net {

class ListenComm {
 public:
  // Opens a listening socket on the device's address; throws NetError.
  // Accepted connections run with `params` (copied: the handshake timeout
  // and socket options) on the engine `engines` gives.
  ListenComm(const NetDevice& device, int nStreams, const Params& params, EngineSource engines);
  ~ListenComm();
  ListenComm(const ListenComm&) = delete;
  ListenComm& operator=(const ListenComm&) = delete;

  const ListenHandle& handle() const { return handle_; }

  // Progresses setup; returns a comm when one is ready, else nullptr.
  // Throws NetError on failures of the listener itself (e.g. out of fds).
  std::unique_ptr<RecvComm> accept();

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    Fd fd;
    std::string peer;
    uint8_t hello[sizeof(Hello)]{};
    size_t got = 0;
    Clock::time_point deadline;
  };
  struct Group {
    std::vector<Fd> fds;  // by stream index
    size_t arrived = 0;
    uint16_t flags = 0;  // the hellos' (kHelloCallerStream)
    std::string peer;
    Clock::time_point deadline;
  };

  void acceptNew();
  // Reads a pending hello; true when the entry is finished (kept or dropped).
  bool readHello(Pending& p);
  void admit(Pending& p, const Hello& hello);
  void expireGroups(Clock::time_point now);

  const Params params_;
  EngineSource engines_;
  std::mutex mutex_;
  Fd fd_;
  ListenHandle handle_{};
  int nStreams_;
  std::vector<Pending> pending_;
  std::map<uint64_t, Group> groups_;
  bool fullLogged_ = false;                        // the kMaxPending warning, once
  std::optional<Clock::time_point> starvedSince_;  // accept() out of fds or memory since
};

}  // namespace bagua::net
