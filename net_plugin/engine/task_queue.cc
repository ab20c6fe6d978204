// TaskQueue: mutex-protected vector swapped out by the worker, plus eventfd.
#include "net_plugin/engine/task_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "net_plugin/base/status.h"

namespace bagua::net {

TaskQueue::TaskQueue(bool wakes) {
  if (!wakes) return;
  wakeFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wakeFd_ < 0) throw NetError(Status::kSystemError, errnoMessage("eventfd()", errno));
}

TaskQueue::~TaskQueue() {
  if (wakeFd_ >= 0) ::close(wakeFd_);
}

void TaskQueue::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  // Only the first post after a drain pays for the eventfd write.
  if (!woken_.exchange(true, std::memory_order_acq_rel) && wakeFd_ >= 0) {
    uint64_t one = 1;
    ssize_t ignored = ::write(wakeFd_, &one, sizeof(one));
    (void)ignored;  // EAGAIN means the counter is already non-zero: awake anyway
  }
}

void TaskQueue::requestStop() {
  stop_.store(true, std::memory_order_release);
  post([] {});
}

size_t TaskQueue::runAll() {
  // Clear before swapping, so a post racing with the swap wakes us again.
  woken_.store(false, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.swap(tasks_);
  }
  size_t ran = running_.size();
  for (auto& task : running_) task();
  running_.clear();
  return ran;
}

void TaskQueue::clearWake() {
  uint64_t count = 0;
  ssize_t ignored = ::read(wakeFd_, &count, sizeof(count));
  (void)ignored;
}

}  // namespace bagua::net
