// See patterns.h.
#include "tools/bagua_net_perf/patterns.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "tools/bagua_net_perf/data_check.h"
#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {

using plugin_driver::errnoText;
using plugin_driver::TimeoutError;
using plugin_driver::ToolError;

namespace {

using Clock = std::chrono::steady_clock;

double cpuSecondsNow() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// A poll that found nothing to do gives the CPU away, as NCCL's idle proxy
// thread does: on a machine with few cores the transport's own threads (the
// plugin's, the baseline's) need it to make progress at all.
void idle() { sched_yield(); }

double microseconds(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

}  // namespace

PatternRunner::PatternRunner(Transport& transport, RunStore& store, const PatternParams& params)
    : transport_(transport),
      store_(store),
      params_(params),
      depth_(params.pattern == Pattern::kPingPong || params.pattern == Pattern::kTree
                 ? 1
                 : params.depth) {}

PatternRunner::~PatternRunner() {
  for (auto [base, length] : regions_) munmap(base, length);
}

void PatternRunner::setup(size_t maxBytes) {
  const int rank = params_.rank;
  const int world = params_.world;
  std::vector<int> sendPeers;
  std::vector<int> recvPeers;
  switch (params_.pattern) {
    case Pattern::kRing:
      sendPeers = {(rank + 1) % world};
      recvPeers = {(rank + world - 1) % world};
      break;
    case Pattern::kUni:
      if (rank == 0) sendPeers = {1};
      if (rank == 1) recvPeers = {0};
      break;
    case Pattern::kPingPong:
      if (rank < 2) sendPeers = recvPeers = {1 - rank};
      break;
    case Pattern::kTree:
      if (rank > 0) sendPeers.push_back((rank - 1) / 2);
      for (int child : {2 * rank + 1, 2 * rank + 2}) {
        if (child < world) sendPeers.push_back(child);
      }
      recvPeers = sendPeers;
      break;
  }
  transport_.connect(sendPeers, recvPeers);
  stride_ = (std::max<size_t>(maxBytes, 8) + 4095) / 4096 * 4096;
  size_t length = stride_ * static_cast<size_t>(depth_);
  auto allocate = [&]() {
    void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
      TOOL_THROW(
          ToolError,
          errnoText("mmap of " + std::to_string(length) + " B of buffers (lower -e or -d)", errno));
    }
    regions_.emplace_back(static_cast<char*>(base), length);
    return static_cast<char*>(base);
  };
  // Receives first: NCCL posts receives ahead of the matching sends.
  auto addFlow = [&](Direction dir, int peer, char* base) {
    Flow flow;
    flow.dir = dir;
    flow.peer = peer;
    flow.base = base;
    flows_.push_back(flow);
  };
  for (int peer : recvPeers) addFlow(Direction::kRecv, peer, allocate());
  for (int peer : sendPeers) {
    // Pingpong's rank 1 echoes from the buffer it received into.
    bool echo = params_.pattern == Pattern::kPingPong && rank == 1;
    addFlow(Direction::kSend, peer, echo ? flows_[0].base : allocate());
  }
  for (Flow& flow : flows_) {
    flow.memory = transport_.registerMemory(flow.dir, flow.peer, flow.base, length);
    flow.requests.assign(static_cast<size_t>(depth_), nullptr);
  }
}

void PatternRunner::teardown() {
  transport_.close();
  flows_.clear();
}

SizeResult PatternRunner::run(size_t size) {
  SizeResult result;
  result.size = size;
  result.active = !flows_.empty();
  bool hasRecv = std::any_of(flows_.begin(), flows_.end(),
                             [](const Flow& f) { return f.dir == Direction::kRecv; });
  const bool rankZeroTimes =
      params_.pattern == Pattern::kPingPong || params_.pattern == Pattern::kTree;
  result.receiver = rankZeroTimes ? params_.rank == 0 : hasRecv;
  result.iters = params_.iters;
  if (params_.rank == 0) {
    std::fprintf(stderr, "[bagua-net-perf] %s: %s %s\n", params_.label.c_str(),
                 patternName(params_.pattern), formatSize(size).c_str());
  }
  std::string tag = std::to_string(size);
  int checkCount = params_.check ? std::max(params_.warmup, depth_) : params_.warmup;
  store_.barrier(tag + ".warmup", params_.rank, params_.world);
  if (result.active && checkCount > 0) loop(size, checkCount, Phase::kCheck, &result);
  if (params_.check) prefillTimed(size);
  store_.barrier(tag + ".timed", params_.rank, params_.world);
  if (!result.active) return result;
  double cpu0 = cpuSecondsNow();
  auto t0 = Clock::now();
  loop(size, params_.iters, Phase::kTimed, &result);
  result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  result.cpuSeconds = cpuSecondsNow() - cpu0;
  result.bytesMoved = static_cast<uint64_t>(size) * flows_.size() * params_.iters;
  if (params_.check) verifyTimed(size, params_.iters, &result);
  return result;
}

Request* PatternRunner::postOne(Flow& flow, char* data, size_t size, const std::string& what) {
  auto deadline = Clock::now() + params_.timeout;
  while (true) {
    Request* request = flow.dir == Direction::kSend
                           ? transport_.isend(flow.peer, data, size, flow.memory)
                           : transport_.irecv(flow.peer, data, size, flow.memory);
    if (request) return request;
    idle();
    if (Clock::now() > deadline) {
      throw TimeoutError(what + ": the transport " + "kept returning a NULL request for " +
                         std::to_string(params_.timeout.count()) + " s");
    }
  }
}

size_t PatternRunner::waitOne(Flow& flow, Request* request, const std::string& what) {
  auto deadline = Clock::now() + params_.timeout;
  size_t bytes = 0;
  while (!transport_.test(request, &bytes)) {
    idle();
    if (Clock::now() > deadline) {
      throw TimeoutError(what + " (" + (flow.dir == Direction::kSend ? "send to" : "receive from") +
                         " rank " + std::to_string(flow.peer) + ") not done after " +
                         std::to_string(params_.timeout.count()) + " s");
    }
  }
  return bytes;
}

void PatternRunner::checkReceived(const Flow& flow, const char* data, size_t size, size_t bytes,
                                  bool verify, uint64_t tag, SizeResult* result) const {
  if (bytes != size) {
    if (result->sizeErrors++ == 0) {
      std::fprintf(stderr, "rank %d: test() reported %zu B received from rank %d, expected %zu\n",
                   params_.rank, bytes, flow.peer, size);
    }
  }
  if (!verify) return;
  int source = params_.pattern == Pattern::kPingPong ? 0 : flow.peer;
  uint64_t wrong = countWrongBytes(data, size, source, tag);
  if (wrong && result->wrongBytes == 0) {
    std::fprintf(stderr, "rank %d: %llu wrong byte(s) in a %zu B message from rank %d\n",
                 params_.rank, static_cast<unsigned long long>(wrong), size, flow.peer);
  }
  result->wrongBytes += wrong;
}

void PatternRunner::lockstep(size_t size, int count, Phase phase, SizeResult* result) {
  const bool checking = phase == Phase::kCheck && params_.check;
  const auto total = static_cast<uint64_t>(count);
  std::vector<Clock::time_point> started(static_cast<size_t>(depth_));
  uint64_t itersStarted = 0;
  uint64_t itersDone = 0;
  for (Flow& flow : flows_) flow.posted = flow.done = flow.prepared = 0;
  auto lastProgress = Clock::now();
  while (itersDone < total) {
    bool progress = false;
    for (Flow& flow : flows_) {
      while (flow.posted < total && flow.posted < itersDone + depth_) {
        uint64_t i = flow.posted;
        if (i == itersStarted) {
          started[i % depth_] = Clock::now();  // the first post of iteration i on this rank
          ++itersStarted;
        }
        if (checking && flow.dir == Direction::kSend && flow.prepared == i) {
          fillPattern(slot(flow, i), size, params_.rank, patternTag(size, i, false));
          ++flow.prepared;
        }
        Request* request = flow.dir == Direction::kSend
                               ? transport_.isend(flow.peer, slot(flow, i), size, flow.memory)
                               : transport_.irecv(flow.peer, slot(flow, i), size, flow.memory);
        if (request == nullptr) break;  // "try again later"
        flow.requests[i % depth_] = request;
        ++flow.posted;
        progress = true;
      }
      while (flow.done < flow.posted) {
        size_t bytes = 0;
        if (!transport_.test(flow.requests[flow.done % depth_], &bytes)) break;
        if (flow.dir == Direction::kRecv) {
          checkReceived(flow, slot(flow, flow.done), size, bytes, checking,
                        patternTag(size, flow.done, false), result);
        }
        ++flow.done;
        progress = true;
      }
    }
    auto now = Clock::now();
    while (itersDone < total && std::all_of(flows_.begin(), flows_.end(),
                                            [&](const Flow& f) { return f.done > itersDone; })) {
      if (phase == Phase::kTimed && result->receiver) {
        result->latencyUs.push_back(microseconds(now - started[itersDone % depth_]));
      }
      ++itersDone;
    }
    if (progress) {
      lastProgress = now;
    } else if (now - lastProgress > params_.timeout) {
      throw TimeoutError(stuckReport(size, count));
    } else {
      idle();
    }
  }
}

void PatternRunner::pingpong(size_t size, int count, Phase phase, SizeResult* result) {
  const bool checking = phase == Phase::kCheck && params_.check;
  Flow& recv = flows_[0];
  Flow& send = flows_[1];
  for (int i = 0; i < count; ++i) {
    uint64_t tag = patternTag(size, static_cast<uint64_t>(i), false);
    std::string what = "pingpong message " + std::to_string(i) + " of " + formatSize(size);
    if (params_.rank == 0) {
      if (checking) fillPattern(send.base, size, 0, tag);
      auto t0 = Clock::now();
      Request* r = postOne(recv, recv.base, size, what);
      Request* s = postOne(send, send.base, size, what);
      waitOne(send, s, what);
      size_t bytes = waitOne(recv, r, what + ", the echo");
      auto t1 = Clock::now();
      if (phase == Phase::kTimed) result->latencyUs.push_back(microseconds(t1 - t0) / 2);
      checkReceived(recv, recv.base, size, bytes, checking, tag, result);
    } else {
      Request* r = postOne(recv, recv.base, size, what);
      size_t bytes = waitOne(recv, r, what);
      checkReceived(recv, recv.base, size, bytes, checking, tag, result);
      waitOne(send, postOne(send, send.base, size, what + ", the echo"), what + ", the echo");
    }
  }
}

void PatternRunner::tree(size_t size, int count, Phase phase, SizeResult* result) {
  const bool checking = phase == Phase::kCheck && params_.check;
  const int rank = params_.rank;
  const int parent = rank > 0 ? (rank - 1) / 2 : -1;
  std::vector<int> children;
  for (int child : {2 * rank + 1, 2 * rank + 2}) {
    if (child < params_.world) children.push_back(child);
  }
  std::vector<Request*> ups(children.size());
  std::vector<Request*> downs(children.size());
  Clock::time_point previousRound;
  for (int i = 0; i < count; ++i) {
    const uint64_t tag = patternTag(size, static_cast<uint64_t>(i), false);
    const std::string what = "tree round " + std::to_string(i) + " of " + formatSize(size);
    // Receives first, as NCCL posts them ahead of the sends.
    for (size_t c = 0; c < children.size(); ++c) {
      Flow& up = flow(Direction::kRecv, children[c]);
      ups[c] = postOne(up, up.base, size, what + ", up");
    }
    Request* down = nullptr;
    if (parent >= 0) {
      Flow& from = flow(Direction::kRecv, parent);
      down = postOne(from, from.base, size, what + ", down");
    }
    for (size_t c = 0; c < children.size(); ++c) {
      Flow& up = flow(Direction::kRecv, children[c]);
      checkReceived(up, up.base, size, waitOne(up, ups[c], what + ", up"), checking, tag, result);
    }
    if (parent >= 0) {
      Flow& to = flow(Direction::kSend, parent);
      if (checking) fillPattern(to.base, size, rank, tag);
      waitOne(to, postOne(to, to.base, size, what + ", up"), what + ", up");
      Flow& from = flow(Direction::kRecv, parent);
      checkReceived(from, from.base, size, waitOne(from, down, what + ", down"), checking, tag,
                    result);
    } else {
      const auto now = Clock::now();
      if (phase == Phase::kTimed && i > 0) {
        result->latencyUs.push_back(microseconds(now - previousRound));
      }
      previousRound = now;
    }
    for (size_t c = 0; c < children.size(); ++c) {
      Flow& to = flow(Direction::kSend, children[c]);
      if (checking) fillPattern(to.base, size, rank, tag);
      downs[c] = postOne(to, to.base, size, what + ", down");
    }
    for (size_t c = 0; c < children.size(); ++c) {
      waitOne(flow(Direction::kSend, children[c]), downs[c], what + ", down");
    }
  }
}

PatternRunner::Flow& PatternRunner::flow(Direction dir, int peer) {
  for (Flow& f : flows_) {
    if (f.dir == dir && f.peer == peer) return f;
  }
  TOOL_THROW(ToolError, std::string("no ") + (dir == Direction::kSend ? "send" : "receive") +
                            " flow with rank " + std::to_string(peer));
}

void PatternRunner::loop(size_t size, int count, Phase phase, SizeResult* result) {
  switch (params_.pattern) {
    case Pattern::kPingPong:
      return pingpong(size, count, phase, result);
    case Pattern::kTree:
      return tree(size, count, phase, result);
    default:
      return lockstep(size, count, phase, result);
  }
}

void PatternRunner::prefillTimed(size_t size) {
  bool echo = params_.pattern == Pattern::kPingPong && params_.rank == 1;
  for (const Flow& flow : flows_) {
    if (flow.dir != Direction::kSend || echo) continue;
    for (int s = 0; s < depth_; ++s) {
      fillPattern(slot(flow, static_cast<uint64_t>(s)), size, params_.rank,
                  patternTag(size, static_cast<uint64_t>(s), true));
    }
  }
}

void PatternRunner::verifyTimed(size_t size, int count, SizeResult* result) const {
  // The last message of every slot used must carry that slot's timed pattern.
  for (const Flow& flow : flows_) {
    if (flow.dir != Direction::kRecv) continue;
    for (int s = 0; s < std::min(count, depth_); ++s) {
      auto i = static_cast<uint64_t>(s);
      checkReceived(flow, slot(flow, i), size, size, true, patternTag(size, i, true), result);
    }
  }
}

std::string PatternRunner::stuckReport(size_t size, int count) const {
  std::ostringstream text;
  text << patternName(params_.pattern) << " " << formatSize(size) << ": no progress for "
       << params_.timeout.count() << " s;";
  for (const Flow& flow : flows_) {
    text << (flow.dir == Direction::kSend ? " send to rank " : " receive from rank ") << flow.peer
         << ": " << flow.posted << " of " << count << " posted, " << flow.done << " completed;";
  }
  return text.str();
}

}  // namespace bagua::net_perf
