// PromiseWork.
#include "runtime/comm/work.h"

#include "runtime/common/error.h"

namespace bagua {

bool PromiseWork::done() {
  if (future_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
  future_.get();  // rethrows the operation's error
  return true;
}

void PromiseWork::wait(std::chrono::milliseconds timeout) {
  if (future_.wait_for(timeout) != std::future_status::ready) {
    BAGUA_THROW(TimeoutError,
                what_ + " did not finish within " + std::to_string(timeout.count()) + " ms");
  }
  future_.get();
}

}  // namespace bagua
