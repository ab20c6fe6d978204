// drainOrKeep: see in_flight.h.
#include "runtime/comm/in_flight.h"

#include <cstdio>
#include <exception>
#include <mutex>

namespace bagua {

bool finished(Work& work) {
  try {
    return work.done();
  } catch (const std::exception&) {
    return true;  // it failed: finished too
  }
}

void drainOrKeep(const std::vector<std::shared_ptr<Work>>& works, std::chrono::milliseconds timeout,
                 std::shared_ptr<void> keep, const std::string& owner) {
  bool running = false;
  for (const auto& work : works) {
    if (!work || finished(*work)) continue;
    try {
      work->wait(timeout);
    } catch (const std::exception&) {
      // its error was reported to whoever waited first; here only "still running" counts
    }
    // Work of one communicator finishes in order: the rest waits behind this one.
    if (!finished(*work)) {
      running = true;
      break;
    }
  }
  if (!running) return;
  // Never destroyed: the communicator may write into these until it ends.
  static std::mutex mutex;
  static auto* kept = new std::vector<std::shared_ptr<void>>();
  {
    std::lock_guard<std::mutex> lock(mutex);
    kept->push_back(std::move(keep));
  }
  std::fprintf(stderr,
               "[bagua] %s: closed with communication still running (a peer late or gone); its "
               "buffers stay allocated until the process exits\n",
               owner.c_str());
}

void drainOrKeep(DeviceOps& ops, std::vector<std::shared_ptr<Work>> works,
                 std::chrono::milliseconds timeout, std::shared_ptr<void> keep,
                 const std::string& owner) {
  try {
    works.push_back(ops.fence(owner + ": teardown"));
  } catch (const std::exception&) {
    // the communicator is stopped: what it had queued has run
  }
  drainOrKeep(works, timeout, std::move(keep), owner);
}

}  // namespace bagua
