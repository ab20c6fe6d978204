// GlooCommunicator: connection setup, the worker thread that runs every
// operation in order, and point to point (the collectives:
// gloo_collectives.cc).
#include "runtime/comm/gloo_communicator.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/comm/op_args.h"
#include "runtime/common/error.h"

namespace bagua {
namespace {

// Presents a bagua::Store to Gloo's rendezvous.
class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(bagua::Store& store, std::chrono::milliseconds timeout)
      : store_(store), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    std::vector<uint8_t> v = store_.get(key, timeout_);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_.wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    store_.wait(keys, timeout);
  }

 private:
  bagua::Store& store_;
  std::chrono::milliseconds timeout_;
};

gloo::transport::tcp::attr deviceAttr(const std::string& iface) {
  gloo::transport::tcp::attr attr;
  const char* env = std::getenv("GLOO_SOCKET_IFNAME");
  if (!iface.empty()) {
    attr.iface = iface;
  } else if (env != nullptr && env[0] != '\0') {
    attr.iface = env;
  } else {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    attr.hostname = host;
  }
  return attr;
}

// Gloo's TCP pairs write with plain write(2)/writev(2): writing to a peer that
// died raises SIGPIPE, whose default action kills this process before Gloo can
// report the closed connection. Python already ignores SIGPIPE; C++ programs
// get the same here, unless they installed their own handler.
void ignoreSigpipeUnlessHandled() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
}

}  // namespace

GlooCommunicator::GlooCommunicator(Store& store, int rank, int size, Options options)
    : rank_(rank),
      size_(size),
      options_(std::move(options)),
      sendSeq_(static_cast<size_t>(std::max(size, 1)), 0),
      recvSeq_(static_cast<size_t>(std::max(size, 1)), 0) {
  BAGUA_ENFORCE(size >= 1 && rank >= 0 && rank < size,
                "GlooCommunicator: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                    " is out of range");
  ignoreSigpipeUnlessHandled();
  try {
    auto device = gloo::transport::tcp::CreateDevice(deviceAttr(options_.iface));
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(options_.timeout);
    GlooStoreAdapter adapter(store, options_.timeout);
    gloo::rendezvous::PrefixStore prefixed(options_.prefix, adapter);
    context->connectFullMesh(prefixed, device);
    context_ = context;
  } catch (const bagua::Error&) {
    throw;
  } catch (const std::exception& e) {
    BAGUA_THROW(CommError, std::string("Gloo could not connect rank ") + std::to_string(rank) +
                               " of " + std::to_string(size) + ": " + e.what());
  }
  worker_ = std::thread([this] { run(); });
}

GlooCommunicator::~GlooCommunicator() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void GlooCommunicator::run() {
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

std::shared_ptr<Work> GlooCommunicator::enqueue(std::string what, std::function<void()> fn) {
  auto work = std::make_shared<PromiseWork>(std::move(what));
  auto task = [this, work, fn = std::move(fn)] {
    // After a failure the connections are in an unknown state: every later
    // operation fails with the first error instead of running.
    if (firstError_) {
      work->fail(firstError_);
      return;
    }
    try {
      fn();
      work->succeed();
      return;
    } catch (const bagua::Error&) {
      work->fail(std::current_exception());
    } catch (const gloo::IoException& e) {
      work->fail(std::make_exception_ptr(
          CommError(work->what() + " failed: " + e.what(), __FILE__, __LINE__)));
    } catch (const std::exception& e) {
      bool timeout = std::strstr(e.what(), "Timed out") != nullptr ||
                     std::strstr(e.what(), "timed out") != nullptr;
      std::string message = work->what() + " failed: " + e.what();
      work->fail(timeout ? std::make_exception_ptr(TimeoutError(message, __FILE__, __LINE__))
                         : std::make_exception_ptr(CommError(message, __FILE__, __LINE__)));
    }
    try {
      work->wait(std::chrono::milliseconds(0));
    } catch (...) {
      firstError_ = std::current_exception();
    }
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    BAGUA_ENFORCE(!stopping_, "GlooCommunicator: enqueue after shutdown");
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return work;
}

// Point-to-point slots: a prefix no Gloo collective uses, then the message's
// sequence number on that (sender, receiver) pair, counted alike on both
// sides (messages between two ranks match in order).
constexpr uint64_t kP2pSlotPrefix = 0xBA6AULL << 48;

std::shared_ptr<Work> GlooCommunicator::send(const void* data, size_t bytes, int peer) {
  checkPeer("send", peer, rank_, size_);
  uint64_t slot = kP2pSlotPrefix | sendSeq_[static_cast<size_t>(peer)]++;
  // The send is posted in order on the worker, but the worker does not wait
  // for it to complete (that would deadlock two ranks sending to each other
  // before receiving): a helper thread waits and finishes the Work.
  auto done = std::make_shared<PromiseWork>(describeBytes("send", bytes));
  enqueue("post " + done->what(), [this, data, bytes, peer, slot, done] {
    std::shared_ptr<gloo::transport::UnboundBuffer> buf =
        context_->createUnboundBuffer(const_cast<void*>(data), bytes);
    buf->send(peer, slot);
    std::thread([buf, done, timeout = options_.timeout] {
      try {
        buf->waitSend(timeout);
        done->succeed();
      } catch (const std::exception& e) {
        done->fail(std::make_exception_ptr(
            CommError(done->what() + " failed: " + e.what(), __FILE__, __LINE__)));
      }
    }).detach();
  });
  return done;
}

std::shared_ptr<Work> GlooCommunicator::recv(void* data, size_t bytes, int peer) {
  checkPeer("recv", peer, rank_, size_);
  uint64_t slot = kP2pSlotPrefix | recvSeq_[static_cast<size_t>(peer)]++;
  return enqueue(describeBytes("recv", bytes), [this, data, bytes, peer, slot] {
    auto buf = context_->createUnboundBuffer(data, bytes);
    buf->recv(peer, slot);
    buf->waitRecv(options_.timeout);
  });
}

void GlooCommunicator::waitFor(std::shared_ptr<Work> work) {
  std::string what = "waiting for " + work->what();
  enqueue(std::move(what), [work = std::move(work), timeout = options_.timeout] {
    work->wait(timeout);
  });
}

}  // namespace bagua
