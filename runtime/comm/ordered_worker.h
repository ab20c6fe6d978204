// One thread that runs tasks in the order they were enqueued, each with a
// Work that finishes when it has run. The CPU communicators run every
// collective and every compute step (CpuOps) on one, so the caller never
// blocks on the network and compute stays ordered with communication.
//
// After a task fails, the connections it used are in an unknown state:
// every later task fails with the first error instead of running. `mapError`
// turns a library's exception (not a bagua::Error) into the bagua error the
// Work carries.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/comm/work.h"

namespace bagua {

class OrderedWorker {
 public:
  // (what failed, the exception) -> the error to report.
  using ErrorMapper = std::function<std::exception_ptr(const std::string&, const std::exception&)>;

  explicit OrderedWorker(ErrorMapper mapError);
  // Runs what is queued, then joins the thread.
  ~OrderedWorker();

  // Queues `fn`; its Work fails with the task's error (or the first earlier
  // one). Throws InvalidArgument after stop().
  std::shared_ptr<Work> enqueue(std::string what, std::function<void()> fn);
  // Runs what is queued and joins the thread; later enqueue() throws.
  void stop();

 private:
  void run();

  ErrorMapper mapError_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::exception_ptr firstError_;  // worker thread only
  std::thread thread_;
};

// The default mapping: a message containing "timed out" is a TimeoutError,
// anything else a CommError; both name the operation.
std::exception_ptr mapCommException(const std::string& what, const std::exception& e);

}  // namespace bagua
