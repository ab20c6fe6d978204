// OrderedWorker: the queue, the thread, and first-error poisoning.
#include "runtime/comm/ordered_worker.h"

#include <cstring>

#include "runtime/common/error.h"

namespace bagua {

std::exception_ptr mapCommException(const std::string& what, const std::exception& e) {
  bool timeout = std::strstr(e.what(), "Timed out") != nullptr ||
                 std::strstr(e.what(), "timed out") != nullptr;
  std::string message = what + " failed: " + e.what();
  return timeout ? std::make_exception_ptr(TimeoutError(message, __FILE__, __LINE__))
                 : std::make_exception_ptr(CommError(message, __FILE__, __LINE__));
}

OrderedWorker::OrderedWorker(ErrorMapper mapError)
    : mapError_(mapError ? std::move(mapError) : ErrorMapper(mapCommException)) {
  thread_ = std::thread([this] { run(); });
}

OrderedWorker::~OrderedWorker() { stop(); }

void OrderedWorker::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void OrderedWorker::run() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything enqueued has run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

std::shared_ptr<Work> OrderedWorker::enqueue(std::string what, std::function<void()> fn) {
  auto work = std::make_shared<PromiseWork>(std::move(what));
  auto task = [this, work, fn = std::move(fn)] {
    if (firstError_) {
      work->fail(firstError_);
      return;
    }
    try {
      fn();
      work->succeed();
      return;
    } catch (const Error&) {
      work->fail(std::current_exception());
    } catch (const std::exception& e) {
      work->fail(mapError_(work->what(), e));
    }
    firstError_ = work->error();
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    BAGUA_ENFORCE(!stopping_, "enqueue of " + work->what() + " after the communicator shut down");
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return work;
}

}  // namespace bagua
