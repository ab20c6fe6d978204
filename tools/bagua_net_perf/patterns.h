// The measurement loops. A rank's part of a pattern is a set of flows (a
// send connection to one peer, a receive connection from one peer), each with
// `depth` buffer slots. Ring and uni run iterations in lock step: iteration i
// posts one message on every flow of the rank, and iteration i + depth is
// posted once iteration i has completed on every flow, so at most depth
// messages are in flight per connection, each in its own slot. Requests are
// tested oldest first, as NCCL's proxy does. Pingpong is a round trip per
// message; tree a round up a binary tree to rank 0 and back down (each
// rank's flows to and from its parent and children). Every wait gives up
// after the timeout with a description.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/bagua_net_perf/options.h"
#include "tools/bagua_net_perf/run_store.h"
#include "tools/bagua_net_perf/transport.h"

namespace bagua::net_perf {

// One rank's measurement of one message size.
struct SizeResult {
  size_t size = 0;
  bool active = false;      // this rank sent or received in the pattern
  bool receiver = false;    // latency samples come from this rank
  int iters = 0;            // timed iterations
  double seconds = 0;       // wall time of the timed loop (pingpong: one way, x2 n messages)
  double cpuSeconds = 0;    // user + sys of the whole process over the timed loop
  uint64_t bytesMoved = 0;  // sent + received in the timed loop
  uint64_t wrongBytes = 0;  // data-check failures
  uint64_t sizeErrors = 0;  // test() reported another size than was sent
  std::vector<double> latencyUs;
};

struct PatternParams {
  Pattern pattern = Pattern::kRing;
  int rank = 0;
  int world = 2;
  int iters = 20;
  int warmup = 5;
  int depth = 4;
  bool check = true;
  std::chrono::seconds timeout{60};
  std::string label;  // configuration name for progress lines
};

class PatternRunner {
 public:
  PatternRunner(Transport& transport, RunStore& store, const PatternParams& params);
  ~PatternRunner();
  PatternRunner(const PatternRunner&) = delete;
  PatternRunner& operator=(const PatternRunner&) = delete;

  // Connects this rank's flows and allocates and registers slots for maxBytes.
  void setup(size_t maxBytes);
  // Warm-up (checked) and timed iterations of one size, between barriers.
  SizeResult run(size_t size);
  // Closes the transport and frees the buffers.
  void teardown();

 private:
  struct Flow {
    Direction dir = Direction::kSend;
    int peer = 0;
    char* base = nullptr;
    MemHandle* memory = nullptr;
    std::vector<Request*> requests;  // one per slot
    uint64_t posted = 0;
    uint64_t done = 0;
    uint64_t prepared = 0;  // slots filled for sending (check phase)
  };

  enum class Phase { kCheck, kTimed };

  // The pattern's loop: lockstep, pingpong or tree.
  void loop(size_t size, int count, Phase phase, SizeResult* result);
  void lockstep(size_t size, int count, Phase phase, SizeResult* result);
  void pingpong(size_t size, int count, Phase phase, SizeResult* result);
  void tree(size_t size, int count, Phase phase, SizeResult* result);
  Flow& flow(Direction dir, int peer);
  Request* postOne(Flow& flow, char* data, size_t size, const std::string& what);
  size_t waitOne(Flow& flow, Request* request, const std::string& what);
  // Counts a size mismatch and, if verify, the bytes that differ from (source, tag)'s pattern.
  void checkReceived(const Flow& flow, const char* data, size_t size, size_t bytes, bool verify,
                     uint64_t tag, SizeResult* result) const;
  void prefillTimed(size_t size);
  void verifyTimed(size_t size, int count, SizeResult* result) const;
  std::string stuckReport(size_t size, int count) const;
  char* slot(const Flow& flow, uint64_t i) const { return flow.base + (i % depth_) * stride_; }

  Transport& transport_;
  RunStore& store_;
  PatternParams params_;
  int depth_;
  size_t stride_ = 0;
  std::vector<Flow> flows_;
  std::vector<std::pair<char*, size_t>> regions_;
};

}  // namespace bagua::net_perf
