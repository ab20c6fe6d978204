// Cross-thread task queue of a worker, woken through an eventfd that the
// worker's loop waits on (io_uring read or epoll). post() writes the eventfd
// only when the worker has not been woken since it last drained the queue.
// A caller-driven worker, which never sleeps, has no eventfd.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

namespace bagua::net {

class TaskQueue {
 public:
  // Creates the eventfd when `wakes`; throws NetError on failure (EMFILE).
  explicit TaskQueue(bool wakes = true);
  ~TaskQueue();
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  // The eventfd the worker waits on for readability (-1 without one).
  int wakeFd() const { return wakeFd_; }
  // Queues `task` and wakes the worker. Thread-safe.
  void post(std::function<void()> task);
  // Asks the worker loop to end once its fds are detached. Thread-safe.
  void requestStop();
  bool stopRequested() const { return stop_.load(std::memory_order_acquire); }
  // True when tasks were posted since the last runAll() (for spinning loops).
  bool pending() const { return woken_.load(std::memory_order_acquire); }
  // On the worker: runs every queued task. Returns how many ran.
  size_t runAll();
  // On the worker: consumes the eventfd counter after a wake-up.
  void clearWake();

 private:
  int wakeFd_ = -1;
  std::mutex mutex_;
  std::vector<std::function<void()>> tasks_;
  std::vector<std::function<void()>> running_;
  std::atomic<bool> woken_{false};
  std::atomic<bool> stop_{false};
};

}  // namespace bagua::net
