// DiLoCo (Douillard et al. 2023, arXiv 2311.08105) and Streaming DiLoCo
// (arXiv 2501.18512): every rank trains with its own (inner) optimizer; the
// ranks share a start point x0, and at each sync the outer gradient
// D = x0 - x (start point minus local weights) is averaged over the ranks
// and an outer optimizer (SGD with Nesterov momentum) moves x0:
//   g = mean over ranks of D        (allreduce; or ByteGrad's compressed
//                                     scatter-reduce/allgather, 8 or 4 bits,
//                                     with error feedback)
//   m = mu m + g;  u = g + mu m (Nesterov) or m;  (mu = 0: u = g)
//   x0 = x0 - lr u
// which is torch.optim.SGD(lr, momentum=mu, nesterov) applied to x0 with
// gradient g. Every rank computes the same x0 from the same bytes, so the
// start points are bit-identical on every rank after every sync.
//
// Fragments (F > 1): the weights are cut into F fragments of whole tensors
// (WeightFragments), each synced on its own schedule (SyncSchedule): H local
// steps apart, the fragments H/F steps apart from each other.
//
// Overlap (delay tau >= 1): at a sync after local step s, D is computed on
// the training's stream and the averaging and outer step run on the
// communicator's stream (GPU) or worker thread (CPU) while steps s+1 .. s+tau
// train on; after local step s + tau the new start point is mixed in:
//   x <- x + (x0_new - x(s))    ( = x0_new + the local progress since s )
// where x(s) = x0_old - D are the weights that were sent. Without overlap
// (tau = 0) x <- x0_new right after step s (every rank bit-identical).
// tau < H, so a fragment's update lands before it is sent again.
//
// afterStep() runs on the training thread after every optimizer step. It
// blocks only where the math needs a result: without overlap, at a sync;
// with overlap, when a fragment's update is due and its communication is
// not done yet.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/algorithms/bytegrad.h"
#include "runtime/algorithms/registry.h"
#include "runtime/algorithms/weight_fragments.h"
#include "runtime/comm/communicator.h"
#include "runtime/ops/device_ops.h"
#include "runtime/ops/step_ops.h"

namespace bagua {

class DiLoCo {
 public:
  enum class Compression { kNone, kMinMaxUInt8, kMinMaxUInt4 };
  struct Options {
    int64_t syncEvery = 100;  // H
    double outerLr = 0.7;
    double outerMomentum = 0.9;
    bool nesterov = true;
    int64_t fragments = 1;     // F
    int64_t overlapSteps = 0;  // tau; 0: no overlap
    bool autoOverlap = false;  // tau = min(H / F, H - 1), kept so when H changes
    Compression compression = Compression::kNone;
    size_t bucketBytes = 10u << 20;
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  };

  // `weights`: every rank the same list; x0 starts as their current values.
  DiLoCo(std::shared_ptr<Communicator> comm, std::shared_ptr<DeviceOps> ops,
         std::vector<TensorSpec> weights, StepOpsFactory stepOps, Options options);
  ~DiLoCo();
  DiLoCo(const DiLoCo&) = delete;
  DiLoCo& operator=(const DiLoCo&) = delete;

  // After the optimizer step of a local step (`stream`: the training's).
  void afterStep(uintptr_t stream);
  // Waits until no communication is in flight (updates still due stay due).
  void flush();

  // sync_every (autotune), between steps: every update in flight is waited
  // for and applied now (earlier than tau), then the schedule restarts from
  // this step with H = `every` (tau recomputed when automatic).
  // InvalidArgument when `every` is below F, or not above an explicit tau.
  void changeSyncEvery(int64_t every, uintptr_t stream);
  int64_t syncEvery() const { return schedule_.every; }
  int64_t scheduleBase() const { return schedule_.base; }
  int64_t overlapSteps() const { return options_.overlapSteps; }

  int64_t steps() const { return steps_; }
  size_t fragments() const { return weights_.fragments(); }
  // Local step of fragment f's last sync (its send) and of its last applied
  // update; 0 when none yet.
  int64_t lastSendStep(size_t f) const { return fragments_[f].lastSend; }
  int64_t lastApplyStep(size_t f) const { return fragments_[f].lastApply; }

  // Checkpoint state: named flat buffers (start point, momentum, error
  // feedback residual, the update of a fragment in flight) and per fragment
  // the step its pending update is due (0: none). save* flushes first.
  struct StateBuffer {
    std::string name;  // "x0.<bucket>", "momentum.<bucket>", "residual.<bucket>", "update.<bucket>"
    DType dtype;
    size_t numel;
  };
  std::vector<StateBuffer> stateBuffers() const;
  // Copies buffer `name` into / from `data` (memory of the weights' device,
  // numel elements of its dtype), after the work on the training's `stream`;
  // blocks until done.
  void saveBuffer(const std::string& name, void* data, uintptr_t stream);
  void loadBuffer(const std::string& name, const void* data, uintptr_t stream);
  std::vector<int64_t> dueSteps() const;
  // Restores the local step count and the due steps (after loading
  // buffers) and, with every > 0, a changed schedule (H and its base step).
  void restore(int64_t steps, const std::vector<int64_t>& due, int64_t every = 0,
               int64_t base = 0);
  // The start point of bucket b (device memory), for tests.
  const void* startPoint(size_t bucket) const { return buckets_[bucket].x0->data(); }

 private:
  struct Bucket {
    std::unique_ptr<DeviceBuffer> x0, momentum;
    std::unique_ptr<DeviceBuffer> delta;     // D at a sync; then x0_new - x(s) (overlap)
    std::unique_ptr<DeviceBuffer> averaged;  // g, then u
  };
  struct Fragment {
    int64_t due = 0;  // local step its update is applied after (0: none pending)
    int64_t lastSend = 0;
    int64_t lastApply = 0;
    std::shared_ptr<Work> work;  // the averaging and outer step in flight
  };

  void send(size_t f, uintptr_t stream);
  void apply(size_t f, uintptr_t stream);
  void outerStep(size_t b);  // on the communicator's ops
  DeviceBuffer* buffer(const std::string& name) const;

  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<DeviceOps> ops_;
  WeightFragments weights_;
  StepOpsFactory stepOps_;
  Options options_;
  SyncSchedule schedule_;
  std::unique_ptr<ByteGrad> compressor_;  // when compressing
  std::vector<Bucket> buckets_;
  std::vector<Fragment> fragments_;
  int64_t steps_ = 0;
};

// Options from the registry's resolved options (overlap_steps 0 with overlap:
// tau = min(H / F, H - 1)); InvalidArgument naming a bad one.
DiLoCo::Options diLoCoOptions(const OptionMap& resolved);

// Its registry entry ("diloco"). The factory builds the warm-up's gradient
// allreduce; the engine drives DiLoCo itself after it.
AlgorithmInfo diLoCoInfo();
// "none", "minmax_uint8", "fp4" -> Compression; InvalidArgument otherwise.
DiLoCo::Compression parseCompression(const std::string& name);

}  // namespace bagua
