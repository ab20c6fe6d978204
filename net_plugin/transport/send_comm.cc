// SendComm: the message queue and the chunk hand-out to streams.
#include "net_plugin/transport/send_comm.h"

#include <sys/socket.h>
#include <algorithm>

#include <cerrno>

#include "net_plugin/base/cpu_budget.h"
#include "net_plugin/base/hop_trace.h"
#include "net_plugin/base/log.h"
#include "net_plugin/base/steady_ns.h"
#include "net_plugin/engine/caller_wait.h"

namespace bagua::net {

SendComm::SendComm(std::vector<Fd> fds, std::string peer, std::shared_ptr<Engine> engine,
                   std::shared_ptr<RateLimiter> limiter, const Params& params, int initialStreams,
                   CallerStreamUse caller)
    : Comm(Kind::kSend, std::move(peer), std::move(engine)),
      pool_(this, RequestKind::kSend),
      idle_(fds.size(), true),
      chunkBytes_(params.chunkBytes),
      // Resolved by the process's PluginState; a comm built from bare Params
      // (tests) takes auto as the many-CPU value.
      minSplitBytes_(minSplitBytesFor(params.minSplitBytes, 0)),
      limiter_(std::move(limiter)) {
  callerQuietBytes_ = std::min(caller.quietBytes, minSplitBytes_);
  callerQuietBytesInARun_ = std::min(caller.quietBytesInARun, callerQuietBytes_);
  size_t data = fds.size() - (caller.open && fds.size() > 1 ? 1 : 0);
  if (data < fds.size()) callerIndex_ = static_cast<int>(data);
  active_ = static_cast<int>(data);
  if (params.adaptiveStreams != 0 && data > 1) {
    std::vector<int> raw;
    for (size_t i = 0; i < data; ++i) raw.push_back(fds[i].get());
    tuner_.emplace(std::move(raw), initialStreams);
    active_ = tuner_->active();
  }
  mostActive_ = active_;
  if (!fds.empty()) setTraceConn(fds[0].get());
  std::vector<std::unique_ptr<Stream>> streams;
  for (size_t i = 0; i < fds.size(); ++i) {
    Worker* worker = i < data ? &nextWorker(*engine_) : openCallerEngine();
    streams.push_back(std::make_unique<SendStream>(this, static_cast<int>(i), std::move(fds[i]),
                                                   worker, params.zeroCopy, params.zeroCopyBytes));
  }
  startStreams(std::move(streams));
}

SendComm::~SendComm() {
  if (tuner_ && (tuner_->widened() > 0 || tuner_->narrowed() > 0)) {
    BAGUA_INFO(
        NCCL_NET, "connection to %s ended on %d of %d streams (widened %d, narrowed %d times)",
        peer().c_str(), tuner_->active(), tuner_->most(), tuner_->widened(), tuner_->narrowed());
  }
}

int SendComm::activeStreams() {
  std::lock_guard<std::mutex> lock(mutex_);
  return active_;
}

int SendComm::mostActiveStreams() {
  std::lock_guard<std::mutex> lock(mutex_);
  return mostActive_;
}

uint64_t SendComm::callerStreamMessages() {
  std::lock_guard<std::mutex> lock(mutex_);
  return callerMessages_;
}

Status SendComm::isend(void* data, size_t size, Request** out) {
  std::vector<SendStream*> wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Request* req = pool_.acquire();
    *out = req;
    if (req == nullptr) return Status::kOk;  // all in use: NCCL asks again
    req->seq = nextSeq_++;
    req->data = static_cast<uint8_t*>(data);
    req->size = size;
    int64_t start = hoptrace::on() ? steadyNs() : 0;
    bool whole = sendInlineLocked(req);
    if (hoptrace::on()) {
      hoptrace::record(hoptrace::Event::kIsend, traceConn(), req->seq, size,
                       (steadyNs() - start) * 2 + (whole ? 1 : 0), start);
    }
    if (whole) return Status::kOk;
    queue_.push_back(req);
    // Wake as many idle streams as the message has chunks.
    size_t chunks = size <= minSplitBytes_ ? 1 : (size + chunkBytes_ - 1) / chunkBytes_;
    for (size_t i = 0; i < static_cast<size_t>(active_) && wake.size() < chunks; ++i) {
      if (idle_[i]) {
        idle_[i] = false;
        wake.push_back(static_cast<SendStream*>(streams_[i].get()));
      }
    }
  }
  for (SendStream* s : wake) s->worker().post([s] { s->pump(); });
  engine_->progress();  // caller-driven: start sending now
  callerProgress();
  return Status::kOk;
}

bool SendComm::sendInlineLocked(Request* req) {
  if (req->size > minSplitBytes_ || limiter_ || failed()) return false;
  // The caller stream first: its receiver reads it without a wake-up. Its
  // messages need not wait for the queue (the receiver places every chunk
  // by sequence number, from any stream). A caller stream whose socket is
  // full took nothing: an idle worker stream may still take the message.
  // Where workers spin it takes only the smallest messages, unless they
  // lose their CPUs (a busy host, where a worker must be woken).
  // A message the run rule could move: is it its comm's second within the gap?
  bool inARun = false;
  if (callerQuietBytesInARun_ < callerQuietBytes_ && req->size > callerQuietBytesInARun_) {
    int64_t now = steadyNs();
    inARun = now - lastIsendNs_ < kCallerStreamRunGapNs;
    lastIsendNs_ = now;
  }
  if (callerIndex_ >= 0 && req->size <= callerStreamBytesLocked(inARun) &&
      idle_[static_cast<size_t>(callerIndex_)] &&
      sendWholeLocked(req, static_cast<size_t>(callerIndex_))) {
    return true;
  }
  if (!queue_.empty()) return false;
  size_t stream = 0;
  auto active = static_cast<size_t>(active_);
  while (stream < active && !idle_[stream]) ++stream;
  if (stream == active) return false;
  return sendWholeLocked(req, stream);
}

size_t SendComm::callerStreamBytesLocked(bool inARun) const {
  // A busy host: every message a spin would have been earned by (at most
  // 64 KiB, not the 4 MiB of a 2-CPU process's whole messages).
  if (spinsLostRecently() || callersWaitedRecently()) {
    return std::max(callerQuietBytes_, std::min(minSplitBytes_, kSpinMessageBytes));
  }
  return inARun ? callerQuietBytesInARun_ : callerQuietBytes_;
}

bool SendComm::sendWholeLocked(Request* req, size_t stream) {
  auto* s = static_cast<SendStream*>(streams_[stream].get());
  ChunkHeader header = makeChunkHeader(req->seq, req->size, 0, static_cast<uint32_t>(req->size));
  iovec iov[2] = {{&header, sizeof(header)}, {req->data, req->size}};
  msghdr msg = messageOf(iov, req->size > 0 ? 2 : 1);
  ssize_t n = ::sendmsg(s->fd(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n <= 0) return false;  // EAGAIN or an error: the worker path retries and reports
  if (static_cast<int>(stream) == callerIndex_) {
    ++callerMessages_;
    callerNextSeq_ = req->seq + 1;
  }
  Chunk chunk{req, 0, static_cast<uint32_t>(req->size)};
  if (static_cast<size_t>(n) == sizeof(header) + req->size) {
    req->doneBytes.store(req->size, std::memory_order_relaxed);
    req->done.store(true, std::memory_order_release);
    return true;
  }
  // The kernel took part of it: the stream's worker sends the rest.
  idle_[stream] = false;
  size_t sent = static_cast<size_t>(n);
  s->worker().post([s, chunk, sent] { s->resume(chunk, sent); });
  return true;
}

bool SendComm::takeChunk(int stream, Chunk* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  // A stream the tuner adds starts at the next isend(), which wakes idle
  // streams below active_. Waking it from here would post to another
  // stream's worker from a worker, which could race with close().
  if (tuner_ && !failed() && tuner_->maybeRetune(StreamTuner::Clock::now())) {
    active_ = tuner_->active();
    mostActive_ = std::max(mostActive_, active_);
  }
  // The caller stream takes only whole small messages, none older than one
  // it already carried.
  bool refuse = stream == callerIndex_ ? queue_.empty() || cursor_ != 0 ||
                                             queue_.front()->size > callerStreamBytesLocked() ||
                                             queue_.front()->seq < callerNextSeq_
                                       : stream >= active_;
  if (queue_.empty() || failed() || refuse) {
    idle_[static_cast<size_t>(stream)] = true;
    return false;
  }
  Request* req = queue_.front();
  if (stream == callerIndex_) {
    ++callerMessages_;
    callerNextSeq_ = req->seq + 1;
  }
  uint64_t left = req->size - cursor_;
  uint64_t len = req->size <= minSplitBytes_ ? left : std::min<uint64_t>(left, chunkBytes_);
  *out = Chunk{req, cursor_, static_cast<uint32_t>(len)};
  cursor_ += len;
  if (cursor_ == req->size) {
    queue_.pop_front();
    cursor_ = 0;
  }
  idle_[static_cast<size_t>(stream)] = false;
  return true;
}

}  // namespace bagua::net
