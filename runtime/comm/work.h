// A handle on an enqueued operation. Operations of one communicator run in
// the order they were enqueued; a Work says when one has finished and
// carries its error. Waiting is the caller's choice: the runtime itself
// never blocks the host per operation (see Reducer).
#pragma once

#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <string>

namespace bagua {

class Work {
 public:
  virtual ~Work() = default;
  // True once the operation finished; rethrows its error if it failed.
  virtual bool done() = 0;
  // Blocks until the operation finished; rethrows its error. Throws
  // TimeoutError naming `what()` if `timeout` passes first.
  virtual void wait(std::chrono::milliseconds timeout) = 0;
  // What the operation is, for error messages ("allreduce of 4096 float32").
  virtual const std::string& what() const = 0;
};

// A Work completed by a worker thread through a promise.
class PromiseWork : public Work {
 public:
  explicit PromiseWork(std::string what) : what_(std::move(what)), future_(promise_.get_future()) {}

  void succeed() { promise_.set_value(); }
  void fail(std::exception_ptr error) {
    error_ = error;
    promise_.set_exception(std::move(error));
  }
  // The error fail() was given (null otherwise); for the thread that called it.
  std::exception_ptr error() const { return error_; }

  bool done() override;
  void wait(std::chrono::milliseconds timeout) override;
  const std::string& what() const override { return what_; }

 private:
  std::string what_;
  std::exception_ptr error_;
  std::promise<void> promise_;
  std::shared_future<void> future_;
};

}  // namespace bagua
