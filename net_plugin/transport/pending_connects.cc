// PendingConnects: the connects in progress, and closing abandoned ones.
#include "net_plugin/transport/pending_connects.h"

#include <algorithm>

#include "net_plugin/base/log.h"
#include "net_plugin/base/status.h"
#include "net_plugin/transport/wire.h"

namespace bagua::net {

uint64_t PendingConnects::add(std::unique_ptr<Connector> connector, const void* ctx) {
  std::vector<std::shared_ptr<Connector>> closed;
  uint64_t id = randomToken();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed = takeAbandonedLocked(Clock::now());
    connectors_[id] = Entry{std::move(connector), ctx, Clock::now()};
  }
  for (const auto& c : closed) {
    BAGUA_INFO(NCCL_NET,
               "closed an abandoned connect to %s (not polled for %lld ms past its "
               "BAGUA_NET_CONNECT_TIMEOUT_MS deadline)",
               c->peer().c_str(), static_cast<long long>(abandonAfter().count()));
  }
  return id;  // `closed` releases the sockets here, outside the lock
}

std::shared_ptr<Connector> PendingConnects::find(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = connectors_.find(id);
  if (it != connectors_.end()) {
    it->second.lastPolled = Clock::now();
    return it->second.connector;
  }
  for (const auto& [closedId, peer] : abandoned_) {
    if (closedId == id) {
      throw NetError(Status::kRemoteError,
                     "could not connect to " + peer + " within " +
                         std::to_string(connectTimeoutMs_) +
                         " ms (BAGUA_NET_CONNECT_TIMEOUT_MS); the connect was closed as "
                         "abandoned after it went unpolled");
    }
  }
  return nullptr;
}

void PendingConnects::remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  connectors_.erase(id);
}

size_t PendingConnects::removeContext(const void* ctx) {
  std::vector<std::shared_ptr<Connector>> closed;  // released after the lock
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(connectors_, [&](const auto& e) {
    if (e.second.ctx != ctx) return false;
    closed.push_back(e.second.connector);
    return true;
  });
  return closed.size();
}

size_t PendingConnects::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return connectors_.size();
}

std::chrono::milliseconds PendingConnects::abandonAfter() const {
  return std::max(std::chrono::milliseconds(connectTimeoutMs_), std::chrono::milliseconds(1000));
}

std::vector<std::shared_ptr<Connector>> PendingConnects::takeAbandonedLocked(
    Clock::time_point now) {
  std::vector<std::shared_ptr<Connector>> closed;
  auto grace = abandonAfter();
  for (auto it = connectors_.begin(); it != connectors_.end();) {
    const Entry& e = it->second;
    if (now > e.connector->deadline() + grace && now > e.lastPolled + grace) {
      abandoned_.emplace_back(it->first, e.connector->peer());
      if (abandoned_.size() > kAbandonedKept) abandoned_.pop_front();
      closed.push_back(e.connector);
      it = connectors_.erase(it);
    } else {
      ++it;
    }
  }
  return closed;
}

}  // namespace bagua::net
