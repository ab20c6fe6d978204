// Reducer: ordered bucket launches, step waits, watchdog.
#include "runtime/reducer/reducer.h"

#include <cstring>

#include "runtime/bucket/registration_check.h"
#include "runtime/comm/in_flight.h"
#include "runtime/common/error.h"

namespace bagua {

Reducer::Reducer(std::shared_ptr<Communicator> comm, std::shared_ptr<DeviceOps> ops,
                 std::shared_ptr<Algorithm> algorithm, std::vector<TensorSpec> tensors,
                 Store& store, Options options)
    : comm_(std::move(comm)),
      ops_(std::move(ops)),
      algorithm_(std::move(algorithm)),
      tensors_(std::move(tensors)),
      options_(std::move(options)) {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorSpec& t = tensors_[i];
    BAGUA_ENFORCE(t.device == ops_->device(),
                  "tensor " + std::to_string(i) + " (" + t.name + ") is on the " +
                      (t.device == Device::kCpu ? "CPU" : "GPU") + " but the communicator is not");
    BAGUA_ENFORCE(t.data != nullptr || t.numel == 0,
                  "tensor " + std::to_string(i) + " (" + t.name + ") has no data");
    requireAlgorithmDType("tensor " + std::to_string(i) + " (" + t.name + ")", t.dtype);
  }
  const bool ownCheck = options_.checkRank < 0;
  checkRegistrationConsistent(store, options_.storePrefix, ownCheck ? comm_->rank() : options_.checkRank,
                              ownCheck ? comm_->size() : options_.checkSize, tensors_,
                              options_.timeout);
  buckets_ =
      planBuckets(tensors_, options_.bucketBytes, algorithm_->bucketAlignment(comm_->size()));
  bucketOf_.resize(tensors_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    storage_.push_back(ops_->allocate(buckets_[b].bytes()));
    for (const BucketSlot& s : buckets_[b].slots) bucketOf_[s.tensor] = b;
  }
  algorithm_->setup(buckets_, *comm_, *ops_);
  ready_.assign(tensors_.size(), false);
  readyCount_.assign(buckets_.size(), 0);
  watchdog_ = std::thread([this] { watchdog(); });
}

Reducer::~Reducer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  watchdog_.join();
  // Launched work finishes before the buffers it uses go away; work still
  // running after that (a peer later than the timeout) keeps them.
  struct Buffers {
    std::vector<std::unique_ptr<DeviceBuffer>> storage;
    std::shared_ptr<Algorithm> algorithm;  // its per-bucket scratch
  };
  auto buffers = std::make_shared<Buffers>(Buffers{std::move(storage_), algorithm_});
  drainOrKeep(*ops_, work_, options_.timeout, std::move(buffers), "reducer");
}

void Reducer::markReady(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  BAGUA_ENFORCE(index < tensors_.size(), "markReady: tensor " + std::to_string(index) +
                                             " is not registered (" +
                                             std::to_string(tensors_.size()) + " are)");
  BAGUA_ENFORCE(!ready_[index], "markReady: tensor " + std::to_string(index) + " (" +
                                    tensors_[index].name + ") was already marked in this step");
  ready_[index] = true;
  ++readyCount_[bucketOf_[index]];
  launchReadyBuckets();
}

void Reducer::markReady(size_t index, void* data) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    BAGUA_ENFORCE(index < tensors_.size(), "markReady: tensor " + std::to_string(index) +
                                               " is not registered (" +
                                               std::to_string(tensors_.size()) + " are)");
    BAGUA_ENFORCE(data != nullptr || tensors_[index].numel == 0,
                  "markReady: tensor " + std::to_string(index) + " (" + tensors_[index].name +
                      ") has no data");
    // Only ready tensors are read (at their bucket's launch), so updating the
    // pointer of an unmarked tensor is safe.
    if (!ready_[index]) tensors_[index].data = data;
  }
  markReady(index);
}

void Reducer::markAllReady() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!ready_[i]) {
      ready_[i] = true;
      ++readyCount_[bucketOf_[i]];
    }
  }
  launchReadyBuckets();
}

void Reducer::launchReadyBuckets() {
  while (nextLaunch_ < buckets_.size() &&
         readyCount_[nextLaunch_] == buckets_[nextLaunch_].slots.size()) {
    launch(nextLaunch_++);
  }
}

void Reducer::launch(size_t b) {
  const BucketLayout& layout = buckets_[b];
  auto* base = static_cast<uint8_t*>(storage_[b]->data());
  size_t elem = dtypeSize(layout.dtype);
  for (const BucketSlot& s : layout.slots) {
    const TensorSpec& t = tensors_[s.tensor];
    ops_->copy(base + s.offset * elem, t.data, t.numel * elem);
  }
  BucketContext ctx{b, &layout, base, comm_.get(), ops_.get(), steps_};
  algorithm_->communicate(ctx);
  if (!algorithm_->copiesBackAtWait()) copyBack(b);
  // The copies back are ordered after the algorithm's steps; this fence
  // finishes after them.
  work_.push_back(ops_->fence("bucket " + std::to_string(b) + " of " +
                              std::to_string(buckets_.size()) + " (" + algorithm_->name() + ", " +
                              std::to_string(layout.paddedNumel) + " " + dtypeName(layout.dtype) +
                              ")"));
  launchedAt_.push_back(std::chrono::steady_clock::now());
  cv_.notify_all();
}

void Reducer::copyBack(size_t b) {
  const BucketLayout& layout = buckets_[b];
  auto* base = static_cast<uint8_t*>(storage_[b]->data());
  size_t elem = dtypeSize(layout.dtype);
  for (const BucketSlot& s : layout.slots) {
    const TensorSpec& t = tensors_[s.tensor];
    ops_->copy(t.data, base + s.offset * elem, t.numel * elem);
  }
}

void Reducer::wait() {
  markAllReady();
  std::vector<std::shared_ptr<Work>> work;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    work = work_;
  }
  std::exception_ptr error;
  for (auto& w : work) {
    try {
      w->wait(options_.timeout);
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (!error && algorithm_->copiesBackAtWait()) {
    // Every bucket is done: now the results may replace the tensors.
    for (size_t b = 0; b < buckets_.size(); ++b) copyBack(b);
    try {
      ops_->fence("copying " + std::to_string(buckets_.size()) + " buckets back (" +
                  algorithm_->name() + ")")
          ->wait(options_.timeout);
    } catch (...) {
      error = std::current_exception();
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::string watchdogError = watchdogError_;
  ++steps_;
  work_.clear();
  launchedAt_.clear();
  nextLaunch_ = 0;
  ready_.assign(tensors_.size(), false);
  readyCount_.assign(buckets_.size(), 0);
  watchdogError_.clear();
  if (error) {
    if (!watchdogError.empty()) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        BAGUA_THROW(TimeoutError, watchdogError + "; " + e.what());
      }
    }
    std::rethrow_exception(error);
  }
}

void Reducer::watchdog() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(200));
    auto now = std::chrono::steady_clock::now();
    std::string pending;
    for (size_t i = 0; i < work_.size(); ++i) {
      if (now - launchedAt_[i] < options_.timeout) continue;
      // (one that failed is finished: wait() reports it)
      if (!finished(*work_[i])) pending += (pending.empty() ? "" : ", ") + work_[i]->what();
    }
    if (!pending.empty() && watchdogError_.empty()) {
      watchdogError_ = "watchdog: still pending after " + std::to_string(options_.timeout.count()) +
                       " ms: " + pending;
      fprintf(stderr, "[bagua] %s\n", watchdogError_.c_str());
    }
  }
}

std::vector<size_t> Reducer::packedOffsets() const {
  std::vector<size_t> offsets(tensors_.size() + 1, 0);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    offsets[i + 1] = offsets[i] + tensors_[i].numel * dtypeSize(tensors_[i].dtype);
  }
  return offsets;
}

bool Reducer::forEachStateSlot(const std::function<void(uint8_t*, size_t, size_t)>& fn) {
  const std::vector<size_t> packedOffset = packedOffsets();
  bool any = false;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    DeviceBuffer* state = algorithm_->elementState(b);
    if (state == nullptr) continue;
    any = true;
    const size_t elem = dtypeSize(buckets_[b].dtype);
    for (const BucketSlot& slot : buckets_[b].slots) {
      const size_t bytes = tensors_[slot.tensor].numel * elem;
      if (bytes == 0) continue;
      fn(static_cast<uint8_t*>(state->data()) + slot.offset * elem, packedOffset[slot.tensor],
         bytes);
    }
  }
  return any;
}

std::unique_ptr<DeviceBuffer> Reducer::saveElementState() {
  std::lock_guard<std::mutex> lock(mutex_);
  bool any = false;
  for (size_t b = 0; b < buckets_.size() && !any; ++b) any = algorithm_->elementState(b) != nullptr;
  if (!any) return nullptr;  // no buffer of the model's size for nothing
  auto packed = ops_->allocate(packedOffsets().back());
  auto* base = static_cast<uint8_t*>(packed->data());
  forEachStateSlot([&](uint8_t* state, size_t offset, size_t bytes) {
    ops_->copy(base + offset, state, bytes);
  });
  ops_->fence("reducer: saving the algorithm's state")->wait(options_.timeout);
  return packed;
}

void Reducer::loadElementState(DeviceBuffer& packed) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t total = packedOffsets().back();
  BAGUA_ENFORCE(packed.bytes() == total,
                "reducer: the saved algorithm state holds " + std::to_string(packed.bytes()) +
                    " bytes, these tensors' " + std::to_string(total));
  auto* base = static_cast<uint8_t*>(packed.data());
  if (forEachStateSlot([&](uint8_t* state, size_t offset, size_t bytes) {
        ops_->copy(state, base + offset, bytes);
      })) {
    ops_->fence("reducer: loading the algorithm's state")->wait(options_.timeout);
  }
}

}  // namespace bagua
