// GlooCommunicator: Gloo's options-based collectives on a worker thread.
#include "runtime/comm/gloo_communicator.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu_reduce.h"
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

std::string describe(const char* op, size_t count, DType dtype) {
  return std::string(op) + " of " + std::to_string(count) + " " + dtypeName(dtype);
}

std::string describeBytes(const char* op, size_t bytes) {
  return std::string(op) + " of " + std::to_string(bytes) + " bytes";
}

// Calls fn(T{}) with an unsigned type of dtype's size. Gloo's options take
// the element type only for its size (so segments never split an element);
// the reduce function does the typed arithmetic.
template <typename Fn>
void withElementType(DType dtype, Fn&& fn) {
  switch (dtypeSize(dtype)) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    default:
      return fn(uint64_t{});
  }
}

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

std::shared_ptr<Work> GlooCommunicator::allreduce(void* data, size_t count, DType dtype,
                                                  ReduceOp op) {
  requireReduction("allreduce", dtype, op);
  return enqueue(describe("allreduce", count, dtype), [this, data, count, dtype, op] {
    if (count == 0) return;
    gloo::AllreduceOptions opts(context_);
    withElementType(dtype, [&](auto t) { opts.setOutput(static_cast<decltype(t)*>(data), count); });
    opts.setReduceFunction([dtype, op](void* out, const void* a, const void* b, size_t n) {
      kernels::reduceElementsCpu(dtype, op, out, a, b, n);
    });
    opts.setTimeout(options_.timeout);
    gloo::allreduce(opts);
    if (op == ReduceOp::kAvg) kernels::finishAverageCpu(dtype, data, count, size_);
  });
}

std::shared_ptr<Work> GlooCommunicator::reduceScatter(const void* in, void* out,
                                                      size_t countPerRank, DType dtype,
                                                      ReduceOp op) {
  requireReduction("reduceScatter", dtype, op);
  // Gloo 0.5 has no options-based reduce-scatter: allreduce a copy of the
  // input and keep this rank's chunk (twice the traffic of a true
  // reduce-scatter; fine for the CPU path).
  return enqueue(
      describe("reduceScatter", countPerRank, dtype), [this, in, out, countPerRank, dtype, op] {
        size_t chunkBytes = countPerRank * dtypeSize(dtype);
        if (chunkBytes == 0) return;
        std::vector<uint8_t> all(static_cast<const uint8_t*>(in),
                                 static_cast<const uint8_t*>(in) + chunkBytes * size_);
        gloo::AllreduceOptions opts(context_);
        withElementType(dtype, [&](auto t) {
          opts.setOutput(reinterpret_cast<decltype(t)*>(all.data()), countPerRank * size_);
        });
        opts.setReduceFunction([dtype, op](void* o, const void* a, const void* b, size_t n) {
          kernels::reduceElementsCpu(dtype, op, o, a, b, n);
        });
        opts.setTimeout(options_.timeout);
        gloo::allreduce(opts);
        std::memcpy(out, all.data() + chunkBytes * rank_, chunkBytes);
        if (op == ReduceOp::kAvg) kernels::finishAverageCpu(dtype, out, countPerRank, size_);
      });
}

std::shared_ptr<Work> GlooCommunicator::allgather(const void* in, void* out, size_t bytesPerRank) {
  return enqueue(describeBytes("allgather", bytesPerRank), [this, in, out, bytesPerRank] {
    if (bytesPerRank == 0) return;
    gloo::AllgatherOptions opts(context_);
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), bytesPerRank);
    opts.setOutput(static_cast<uint8_t*>(out), bytesPerRank * size_);
    opts.setTimeout(options_.timeout);
    gloo::allgather(opts);
  });
}

std::shared_ptr<Work> GlooCommunicator::alltoall(const void* in, void* out, size_t bytesPerRank) {
  return enqueue(describeBytes("alltoall", bytesPerRank), [this, in, out, bytesPerRank] {
    if (bytesPerRank == 0) return;
    gloo::AlltoallOptions opts(context_);
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), bytesPerRank * size_);
    opts.setOutput(static_cast<uint8_t*>(out), bytesPerRank * size_);
    opts.setTimeout(options_.timeout);
    gloo::alltoall(opts);
  });
}

std::shared_ptr<Work> GlooCommunicator::broadcast(void* data, size_t bytes, int root) {
  BAGUA_ENFORCE(root >= 0 && root < size_, "broadcast: root " + std::to_string(root) +
                                               " is not a rank of " + std::to_string(size_));
  return enqueue(describeBytes("broadcast", bytes), [this, data, bytes, root] {
    if (bytes == 0) return;
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<uint8_t*>(data), bytes);
    opts.setRoot(root);
    opts.setTimeout(options_.timeout);
    gloo::broadcast(opts);
  });
}

// Point-to-point slots: a prefix no Gloo collective uses, then the message's
// sequence number on that (sender, receiver) pair, counted alike on both
// sides (messages between two ranks match in order).
constexpr uint64_t kP2pSlotPrefix = 0xBA6AULL << 48;

std::shared_ptr<Work> GlooCommunicator::send(const void* data, size_t bytes, int peer) {
  checkPeer(peer, "send");
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
  checkPeer(peer, "recv");
  uint64_t slot = kP2pSlotPrefix | recvSeq_[static_cast<size_t>(peer)]++;
  return enqueue(describeBytes("recv", bytes), [this, data, bytes, peer, slot] {
    auto buf = context_->createUnboundBuffer(data, bytes);
    buf->recv(peer, slot);
    buf->waitRecv(options_.timeout);
  });
}

std::shared_ptr<Work> GlooCommunicator::barrier() {
  return enqueue("barrier", [this] {
    gloo::BarrierOptions opts(context_);
    opts.setTimeout(options_.timeout);
    gloo::barrier(opts);
  });
}

void GlooCommunicator::checkPeer(int peer, const char* op) const {
  BAGUA_ENFORCE(peer >= 0 && peer < size_ && peer != rank_,
                std::string(op) + ": peer " + std::to_string(peer) + " is not another rank of " +
                    std::to_string(size_));
}

}  // namespace bagua
