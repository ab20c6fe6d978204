// GlooCommunicator: connection setup, the ordered worker that runs every
// operation, and point to point (the collectives: gloo_collectives.cc).
#include "runtime/comm/gloo_communicator.h"

#include <gloo/barrier.h>
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
    // A rank's connectFullMesh can return while a peer's is still reading
    // the handshake; a rank that then closed at once (its first step threw,
    // say) failed that peer's constructor with "Connection closed by peer"
    // (8% of runs under load). After this barrier every rank is connected.
    gloo::BarrierOptions connected(context);
    connected.setTimeout(options_.timeout);
    gloo::barrier(connected);
    context_ = context;
  } catch (const bagua::Error&) {
    throw;
  } catch (const std::exception& e) {
    BAGUA_THROW(CommError, std::string("Gloo could not connect rank ") + std::to_string(rank) +
                               " of " + std::to_string(size) + ": " + e.what());
  }
  // Gloo's errors (gloo::IoException, its enforce failures) by their message:
  // "Timed out waiting ..." is a TimeoutError, the rest a CommError.
  worker_ = std::make_unique<OrderedWorker>(mapCommException);
}

GlooCommunicator::~GlooCommunicator() { worker_.reset(); }

std::shared_ptr<Work> GlooCommunicator::enqueue(std::string what, std::function<void()> fn) {
  return worker_->enqueue(std::move(what), std::move(fn));
}

// A send's Work: the post on the worker, then the helper thread's wait for
// the bytes to leave. The post fails at once where the helper never starts
// (the communicator failed before, or posting threw), and with it the send:
// the helper's Work alone stayed unfinished, and a wait ran out its whole
// timeout to report "did not finish" instead of the cause.
class PostedSendWork : public Work {
 public:
  PostedSendWork(std::shared_ptr<Work> posted, std::shared_ptr<PromiseWork> sent)
      : posted_(std::move(posted)), sent_(std::move(sent)) {}
  bool done() override { return posted_->done() && sent_->done(); }
  void wait(std::chrono::milliseconds timeout) override {
    const auto start = std::chrono::steady_clock::now();
    posted_->wait(timeout);
    const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    sent_->wait(std::max(timeout - spent, std::chrono::milliseconds(0)));
  }
  const std::string& what() const override { return sent_->what(); }

 private:
  std::shared_ptr<Work> posted_;
  std::shared_ptr<PromiseWork> sent_;
};

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
  auto posted = enqueue("post " + done->what(), [this, data, bytes, peer, slot, done] {
    std::shared_ptr<gloo::transport::UnboundBuffer> buf =
        context_->createUnboundBuffer(const_cast<void*>(data), bytes);
    buf->send(peer, slot);
    std::thread([buf, done, timeout = options_.timeout] {
      try {
        buf->waitSend(timeout);
        done->succeed();
      } catch (const std::exception& e) {
        done->fail(mapCommException(done->what(), e));  // a timeout is a TimeoutError
      }
    }).detach();
  });
  return std::make_shared<PostedSendWork>(std::move(posted), std::move(done));
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
