// DiLoCo: outer gradients averaged per fragment, an outer Nesterov step on
// the shared start point, the update applied at once or tau steps later.
#include "runtime/algorithms/diloco.h"

#include <algorithm>

#include "runtime/algorithms/gradient_allreduce.h"
#include "runtime/comm/in_flight.h"
#include "runtime/common/error.h"

namespace bagua {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

void check(const DiLoCo::Options& o) {
  BAGUA_ENFORCE(o.syncEvery >= 1, "diloco: sync_every must be at least 1, got " + str(o.syncEvery));
  BAGUA_ENFORCE(o.fragments >= 1, "diloco: fragments must be at least 1, got " + str(o.fragments));
  BAGUA_ENFORCE(o.fragments <= o.syncEvery,
                "diloco: fragments (" + str(o.fragments) + ") must not exceed sync_every (" +
                    str(o.syncEvery) + "): each fragment syncs at its own step");
  BAGUA_ENFORCE(o.outerLr > 0,
                "diloco: outer_lr must be positive, got " + std::to_string(o.outerLr));
  BAGUA_ENFORCE(o.outerMomentum >= 0 && o.outerMomentum < 1,
                "diloco: outer_momentum must be in [0, 1), got " + std::to_string(o.outerMomentum));
  BAGUA_ENFORCE(o.overlapSteps >= 0 && o.overlapSteps < o.syncEvery,
                "diloco: overlap_steps (" + str(o.overlapSteps) +
                    ") must be smaller than sync_every (" + str(o.syncEvery) +
                    "): an update lands before its fragment is sent again");
}

// Options `o` with sync_every `every` (tau recomputed when automatic), checked.
DiLoCo::Options withSyncEvery(DiLoCo::Options o, int64_t every) {
  o.syncEvery = every;
  if (o.autoOverlap) {
    BAGUA_ENFORCE(every >= 2, "diloco: overlap needs sync_every >= 2, got " + str(every));
    o.overlapSteps = std::min(every / std::max<int64_t>(o.fragments, 1), every - 1);
  }
  check(o);
  return o;
}

}  // namespace

DiLoCo::Compression parseCompression(const std::string& name) {
  if (name == "none") return DiLoCo::Compression::kNone;
  if (name == "minmax_uint8") return DiLoCo::Compression::kMinMaxUInt8;
  if (name == "fp4") return DiLoCo::Compression::kMinMaxUInt4;
  BAGUA_THROW(
      InvalidArgument,
      "diloco: compression must be None ('none'), 'minmax_uint8' or 'fp4', got '" + name + "'");
}

DiLoCo::DiLoCo(std::shared_ptr<Communicator> comm, std::shared_ptr<DeviceOps> ops,
               std::vector<TensorSpec> weights, StepOpsFactory stepOps, Options options)
    : comm_(std::move(comm)),
      ops_(std::move(ops)),
      weights_(std::move(weights), options.fragments, options.bucketBytes,
               options.compression == Compression::kNone ? 1 : static_cast<size_t>(comm_->size()),
               "diloco"),
      stepOps_(std::move(stepOps)),
      options_(options),
      schedule_{options.syncEvery, options.fragments, 0} {
  check(options_);
  const std::vector<BucketLayout>& layouts = weights_.buckets();
  for (size_t b = 0; b < layouts.size(); ++b) {
    Bucket bucket;
    bucket.x0 = ops_->allocate(layouts[b].bytes());
    if (options_.outerMomentum > 0) bucket.momentum = ops_->allocate(layouts[b].bytes());
    bucket.delta = ops_->allocate(layouts[b].bytes());
    bucket.averaged = ops_->allocate(layouts[b].bytes());
    weights_.gather(*ops_, b, bucket.x0->data());
    buckets_.push_back(std::move(bucket));
  }
  if (options_.compression != Compression::kNone) {
    ByteGrad::Options bo;
    bo.average = true;
    bo.errorFeedback = true;
    bo.codec = options_.compression == Compression::kMinMaxUInt4
                   ? ByteGrad::Options::Codec::kMinMaxUInt4
                   : ByteGrad::Options::Codec::kMinMaxUInt8;
    compressor_ = std::make_unique<ByteGrad>(bo);
    compressor_->setup(layouts, *comm_, *ops_);
  }
  fragments_.resize(weights_.fragments());
  ops_->fence("diloco: the start point")->wait(options_.timeout);
}

DiLoCo::~DiLoCo() {
  // A failed exchange was reported by afterStep(); one still running behind
  // a late peer (in flight is DiLoCo's normal state with overlap) keeps the
  // buffers it uses.
  std::vector<std::shared_ptr<Work>> works;
  for (const Fragment& fr : fragments_) works.push_back(fr.work);
  struct Buffers {
    std::vector<Bucket> buckets;
    std::unique_ptr<ByteGrad> compressor;
  };
  auto buffers =
      std::make_shared<Buffers>(Buffers{std::move(buckets_), std::move(compressor_)});
  drainOrKeep(*ops_, std::move(works), options_.timeout, std::move(buffers), "diloco");
}

void DiLoCo::afterStep(uintptr_t stream) {
  ++steps_;
  for (size_t f = 0; f < fragments_.size(); ++f) {
    if (fragments_[f].due == steps_) apply(f, stream);
  }
  for (size_t f = 0; f < fragments_.size(); ++f) {
    if (!schedule_.syncs(f, steps_)) continue;
    send(f, stream);
    if (options_.overlapSteps == 0) apply(f, stream);
  }
}

void DiLoCo::send(size_t f, uintptr_t stream) {
  const std::vector<BucketLayout>& layouts = weights_.buckets();
  auto step = stepOps_(stream);
  for (size_t b : weights_.bucketsOf(f)) {
    weights_.combine(*step, b, buckets_[b].delta->data(), buckets_[b].x0->data(), -1.0f);
  }
  comm_->waitFor(step->fence("diloco: outer gradient of fragment " + std::to_string(f)));
  for (size_t b : weights_.bucketsOf(f)) {
    const BucketLayout& layout = layouts[b];
    Bucket& bucket = buckets_[b];
    ops_->copy(bucket.averaged->data(), bucket.delta->data(), layout.bytes());
    if (compressor_) {
      BucketContext ctx{b,           &layout,    bucket.averaged->data(),
                        comm_.get(), ops_.get(), static_cast<size_t>(steps_)};
      compressor_->communicate(ctx);
      // The codes give the zero padding a value: keep it zero, so padding
      // never reaches a chunk's range or the start point.
      const size_t elem = dtypeSize(layout.dtype);
      ops_->zero(static_cast<uint8_t*>(bucket.averaged->data()) + layout.numel * elem,
                 (layout.paddedNumel - layout.numel) * elem);
    } else {
      comm_->allreduce(bucket.averaged->data(), layout.paddedNumel, layout.dtype, ReduceOp::kAvg);
    }
    outerStep(b);
  }
  Fragment& fr = fragments_[f];
  fr.work = ops_->fence("diloco: averaging fragment " + std::to_string(f) + " at local step " +
                        std::to_string(steps_));
  fr.lastSend = steps_;
  fr.due = steps_ + options_.overlapSteps;
}

void DiLoCo::outerStep(size_t b) {
  const BucketLayout& layout = weights_.buckets()[b];
  const DType dtype = layout.dtype;
  const size_t n = layout.paddedNumel;
  Bucket& bucket = buckets_[b];
  void* g = bucket.averaged->data();
  const void* u = g;
  const auto mu = static_cast<float>(options_.outerMomentum);
  const auto lr = static_cast<float>(options_.outerLr);
  if (bucket.momentum) {
    void* m = bucket.momentum->data();
    ops_->addScaled(dtype, m, g, m, n, mu);  // m = g + mu m
    if (options_.nesterov) {
      ops_->addScaled(dtype, g, g, m, n, mu);  // u = g + mu m
    } else {
      u = m;
    }
  }
  if (options_.overlapSteps > 0) {
    // x0_new - x(s) = (x0 - lr u) - (x0 - D) = D - lr u
    ops_->addScaled(dtype, bucket.delta->data(), bucket.delta->data(), u, n, -lr);
  }
  ops_->addScaled(dtype, bucket.x0->data(), bucket.x0->data(), u, n, -lr);
}

void DiLoCo::apply(size_t f, uintptr_t stream) {
  Fragment& fr = fragments_[f];
  if (fr.work) fr.work->wait(options_.timeout);
  fr.work.reset();
  auto step = stepOps_(stream);
  for (size_t b : weights_.bucketsOf(f)) {
    if (options_.overlapSteps == 0) {
      weights_.scatter(*step, b, buckets_[b].x0->data());
    } else {
      weights_.addToTensors(*step, b, buckets_[b].delta->data(), 1.0f);
    }
  }
  fr.due = 0;
  fr.lastApply = steps_;
}

void DiLoCo::changeSyncEvery(int64_t every, uintptr_t stream) {
  const Options changed = withSyncEvery(options_, every);
  for (size_t f = 0; f < fragments_.size(); ++f) {
    if (fragments_[f].due != 0) apply(f, stream);
  }
  options_ = changed;
  schedule_ = SyncSchedule{every, options_.fragments, steps_};
}

void DiLoCo::flush() {
  for (Fragment& fr : fragments_) {
    if (fr.work) fr.work->wait(options_.timeout);
  }
}

std::vector<DiLoCo::StateBuffer> DiLoCo::stateBuffers() const {
  std::vector<StateBuffer> out;
  const std::vector<BucketLayout>& layouts = weights_.buckets();
  for (size_t b = 0; b < layouts.size(); ++b) {
    const std::string i = std::to_string(b);
    out.push_back({"x0." + i, layouts[b].dtype, layouts[b].paddedNumel});
    if (buckets_[b].momentum)
      out.push_back({"momentum." + i, layouts[b].dtype, layouts[b].paddedNumel});
    if (compressor_) out.push_back({"residual." + i, layouts[b].dtype, layouts[b].paddedNumel});
    if (options_.overlapSteps > 0) {
      out.push_back({"update." + i, layouts[b].dtype, layouts[b].paddedNumel});
    }
  }
  return out;
}

DeviceBuffer* DiLoCo::buffer(const std::string& name) const {
  const size_t dot = name.find('.');
  const std::string kind = name.substr(0, dot);
  size_t b = buckets_.size();
  try {
    if (dot != std::string::npos) b = std::stoul(name.substr(dot + 1));
  } catch (const std::exception&) {
  }
  DeviceBuffer* found = nullptr;
  if (b < buckets_.size()) {
    const Bucket& bucket = buckets_[b];
    if (kind == "x0") found = bucket.x0.get();
    if (kind == "momentum") found = bucket.momentum.get();
    if (kind == "residual" && compressor_) found = compressor_->residual(b);
    if (kind == "update" && options_.overlapSteps > 0) found = bucket.delta.get();
  }
  BAGUA_ENFORCE(found != nullptr, "diloco: no state buffer '" + name + "' (" +
                                      std::to_string(buckets_.size()) + " buckets)");
  return found;
}

void DiLoCo::saveBuffer(const std::string& name, void* data, uintptr_t stream) {
  DeviceBuffer* from = buffer(name);
  flush();
  comm_->waitFor(stepOps_(stream)->fence("diloco: before saving " + name));
  ops_->copy(data, from->data(), from->bytes());
  ops_->fence("diloco: saving " + name)->wait(options_.timeout);
}

void DiLoCo::loadBuffer(const std::string& name, const void* data, uintptr_t stream) {
  DeviceBuffer* to = buffer(name);
  flush();
  comm_->waitFor(stepOps_(stream)->fence("diloco: before loading " + name));
  ops_->copy(to->data(), data, to->bytes());
  ops_->fence("diloco: loading " + name)->wait(options_.timeout);
}

std::vector<int64_t> DiLoCo::dueSteps() const {
  std::vector<int64_t> out;
  for (const Fragment& fr : fragments_) out.push_back(fr.due);
  return out;
}

void DiLoCo::restore(int64_t steps, const std::vector<int64_t>& due, int64_t every,
                     int64_t base) {
  BAGUA_ENFORCE(steps >= 0, "diloco: steps must be >= 0, got " + str(steps));
  if (every > 0) {
    BAGUA_ENFORCE(base >= 0 && base <= steps, "diloco: the schedule's base step " + str(base) +
                                                  " is not in [0, " + str(steps) + "]");
    options_ = withSyncEvery(options_, every);
    schedule_ = SyncSchedule{every, options_.fragments, base};
  }
  BAGUA_ENFORCE(due.size() == fragments_.size(),
                "diloco: the checkpoint has " + std::to_string(due.size()) +
                    " fragments, this model " + std::to_string(fragments_.size()));
  flush();
  steps_ = steps;
  for (size_t f = 0; f < due.size(); ++f) {
    BAGUA_ENFORCE(due[f] == 0 || (due[f] > steps && due[f] <= steps + options_.overlapSteps),
                  "diloco: fragment " + std::to_string(f) + "'s update is due at step " +
                      str(due[f]) + ", not within overlap_steps after step " + str(steps));
    fragments_[f].due = due[f];
    fragments_[f].work.reset();
  }
}

DiLoCo::Options diLoCoOptions(const OptionMap& o) {
  DiLoCo::Options out;
  out.syncEvery = optionInt(o, "sync_every");
  out.outerLr = optionDouble(o, "outer_lr");
  out.outerMomentum = optionDouble(o, "outer_momentum");
  out.nesterov = optionBool(o, "nesterov");
  out.fragments = optionInt(o, "fragments");
  out.compression = parseCompression(optionString(o, "compression"));
  const bool overlap = optionBool(o, "overlap");
  const int64_t tau = optionInt(o, "overlap_steps");
  BAGUA_ENFORCE(tau >= 0, "diloco: overlap_steps must be >= 0 (0: automatic), got " + str(tau));
  BAGUA_ENFORCE(overlap || tau == 0, "diloco: overlap_steps=" + str(tau) + " needs overlap=True");
  BAGUA_ENFORCE(!overlap || out.syncEvery >= 2,
                "diloco: overlap needs sync_every >= 2 (an update lands 1 to sync_every-1 steps "
                "after its sync), got sync_every=" +
                    str(out.syncEvery) + "; pass overlap=False");
  if (overlap) {
    out.autoOverlap = tau == 0;
    out.overlapSteps =
        tau > 0 ? tau
                : std::min(out.syncEvery / std::max<int64_t>(out.fragments, 1), out.syncEvery - 1);
  }
  BAGUA_ENFORCE(optionInt(o, "warmup_steps") >= 0,
                "diloco: warmup_steps must be >= 0, got " + str(optionInt(o, "warmup_steps")));
  check(out);
  return out;
}

AlgorithmInfo diLoCoInfo() {
  AlgorithmInfo info;
  info.name = "diloco";
  info.description =
      "DiLoCo: local inner steps, outer Nesterov steps on the averaged outer gradient (streaming, "
      "compressed, overlapped)";
  info.communicates = Communicates::kWeights;
  info.trigger = Trigger::kAfterOptimizerStep;
  info.options = {
      {"sync_every", int64_t{100}, "local (inner) steps between two syncs of a fragment (H)"},
      {"outer_lr", 0.7, "outer learning rate"},
      {"outer_momentum", 0.9, "outer momentum (0: plain outer SGD)"},
      {"nesterov", true, "Nesterov outer momentum"},
      {"fragments", int64_t{1}, "fragments synced at staggered steps (Streaming DiLoCo)"},
      {"overlap", true, "apply a fragment's update overlap_steps after its sync, not at once"},
      {"overlap_steps", int64_t{0},
       "the delay tau (0: min(sync_every / fragments, sync_every - 1))"},
      {"compression", std::string("none"), "none | minmax_uint8 | fp4 (4 bits), error feedback"},
      {"warmup_steps", int64_t{0}, "synchronous gradient allreduce steps first"},
  };
  info.validate = [](const OptionMap& o) { (void)diLoCoOptions(o); };
  info.factory = [](const OptionMap&) {
    return std::make_shared<GradientAllreduce>(GradientAllreduce::Options{true});
  };
  return info;
}

}  // namespace bagua
