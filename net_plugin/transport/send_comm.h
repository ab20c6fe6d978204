// The sending side of a connection: isend() queues messages; each stream,
// whenever it has room, takes the next chunk of the oldest unsent message
// (dynamic balancing: a slow stream simply takes fewer chunks).
//
// Chunking: a message of at most minSplitBytes goes whole as one chunk on
// the first idle stream (lowest latency, one system call); a larger one is
// cut into chunks of at most chunkBytes. A zero-byte message is one header.
//
// Stream count: with BAGUA_NET_ADAPTIVE_STREAMS (the default), chunks go only to the first
// `active_` streams, a count a StreamTuner moves from TCP_INFO each epoch
// (stream_tuner.h); the others stay connected and idle until it grows.
//
// Fast path: when a stream is idle, isend() sends a small message itself, on
// the caller's thread, with a non-blocking sendmsg (as NCCL's socket
// transport does from its proxy thread): no hand-off to a worker, no
// wake-up. It prefers the caller stream (BAGUA_NET_CALLER_STREAM: the last
// stream, on the process's caller-driven engine, which the receiver reads in
// its test()); a worker stream only when nothing is queued. Each stream
// carries its messages in sequence order, the caller stream too: after it
// sent a message ahead of queued ones, it takes none of those. An idle
// stream has no I/O pending and no task queued (both need idle_ cleared
// under the mutex), so the caller may use its socket while holding the
// mutex. What the kernel does not take at once is handed to the stream's
// worker (the caller stream's: turned by this comm's isend and test).
#pragma once

#include <cstdint>

#include <deque>
#include <optional>

#include "net_plugin/base/socket_util.h"
#include "net_plugin/transport/comm.h"
#include "net_plugin/transport/rate_limiter.h"
#include "net_plugin/transport/stream.h"
#include "net_plugin/transport/stream_tuner.h"
#include "net_plugin/transport/wire.h"

namespace bagua::net {

// A piece of a message handed to one stream.
struct Chunk {
  Request* req = nullptr;
  uint64_t offset = 0;
  uint32_t len = 0;
};

class SendStream;

// Where workers spin, the caller stream takes messages up to this size
// (larger ones up to minSplitBytes go to a spinning worker's stream) while no
// spin of the process lost its CPU, and up to minSplitBytes once one did
// (engine.h, spinsLostRecently). 4 ranks on one 16-CPU GPU host: with all
// messages up to 64 KiB on the caller stream, all_reduce at 8-512 B took
// 0.7-0.95x the time of spinning workers but 1.25-1.5x at 2-512 KiB
// (bench/results/recheck_gpu_2026-11-29); with 8 busy loops on the host,
// spinning workers took 3-7x the time of the caller stream at 8 B-256 KiB
// (bench/results/spin_backoff_gpu_2026-12-01). 2 KiB against 512 B, 4 ranks
// (8 paired sweeps): a Tree LL all_reduce of 512 B-1 KiB (1-2 KiB on the wire)
// took 0.78-0.81x the time, which was socket's level before (0.99-1.13x its
// time in three runs); but a Ring LL one of 2-4 KiB, cut into 1-2 KiB pieces
// sent one after another on each connection, took 1.12x. So a message above
// kCallerStreamBytesInARun that follows another of its connection within
// kCallerStreamRunGapNs (a ring's next step; a tree sends one per collective)
// goes to the spinning workers (bench/results/small_final_gpu_2026-12-04).
inline constexpr size_t kCallerStreamBytesWhileSpinning = 2048;
inline constexpr size_t kCallerStreamBytesInARun = 512;
inline constexpr int64_t kCallerStreamRunGapNs = 40'000;
// ... on a rank whose share of the host's CPUs is below this; from it the
// spinning workers take every message while the host is quiet (2 ranks on 16
// CPUs: 8-64 B took 1.16x the time with them on the caller stream).
inline constexpr int kCpusForWorkersAlone = 8;

// A connection's caller stream, as the process's PluginState decides it.
struct CallerStreamUse {
  bool open = false;  // the connection has one (its last stream)
  // The largest message it takes while no spin of the process lost its CPU
  // (every message up to minSplitBytes once one did).
  size_t quietBytes = 0;
  // ... of those, the largest it takes within a run: a message that follows
  // another of the connection within kCallerStreamRunGapNs.
  size_t quietBytesInARun = SIZE_MAX;
};

class SendComm final : public Comm {
 public:
  // Takes the connected stream sockets (index = stream number); `limiter`
  // (may be NULL) caps the rank's send rate. Of `params` it keeps the
  // chunking, adaptive-stream and zero-copy knobs. With adaptive streams it
  // starts sending on `initialStreams` of them. With `caller.open` the last
  // of `fds` is the caller stream.
  SendComm(std::vector<Fd> fds, std::string peer, std::shared_ptr<Engine> engine,
           std::shared_ptr<RateLimiter> limiter, const Params& params, int initialStreams,
           CallerStreamUse caller);
  ~SendComm() override;

  // Queues a message. *req is nullptr when all requests are in use (NCCL
  // retries later). Thread-safe.
  Status isend(void* data, size_t size, Request** req);

  // For streams: the next chunk to send. Returns false, and remembers the
  // stream as idle so the next isend() wakes it, when there is none.
  bool takeChunk(int stream, Chunk* out);

  // For streams: the limiter, or NULL.
  RateLimiter* limiter() const { return limiter_.get(); }
  // The largest chunk handed to a stream (BAGUA_NET_CHUNK_BYTES it was made with).
  size_t chunkBytes() const { return chunkBytes_; }

  // Streams chunks are handed to now (all of them unless adaptive).
  int activeStreams();
  // The largest activeStreams() since connect: no stream at or past it has
  // carried a chunk.
  int mostActiveStreams();
  // Messages handed to the caller stream so far.
  uint64_t callerStreamMessages();

 protected:
  bool busyLocked() const override { return pool_.anyUnfinished(); }
  void releaseLocked(Request* req) override { pool_.release(req); }
  bool mayUseCallerStream(const Request* req) const override { return req->size <= minSplitBytes_; }

 private:
  // Under mutex_: tries the fast path for `req`; true when it took the message.
  bool sendInlineLocked(Request* req);
  // Under mutex_: the largest message the caller stream takes now
  // (CallerStreamUse::quietBytes, or quietBytesInARun when `inARun`; more
  // while spins are lost).
  size_t callerStreamBytesLocked(bool inARun = false) const;
  // Under mutex_: sends `req` whole on the idle `stream` from this thread.
  bool sendWholeLocked(Request* req, size_t stream);

  RequestPool pool_;
  std::deque<Request*> queue_;   // (mutex) messages with chunks not yet taken
  uint64_t cursor_ = 0;          // (mutex) bytes of queue_.front() already taken
  uint64_t nextSeq_ = 0;         // (mutex)
  std::vector<bool> idle_;       // (mutex) per stream: waiting for work
  int active_;                   // (mutex) streams [0, active_) take chunks
  int callerIndex_ = -1;         // the caller stream's index, or -1
  uint64_t callerMessages_ = 0;  // (mutex) messages it took
  // (mutex) The caller stream carries only messages from this sequence on:
  // it may send a small message ahead of older queued ones, and a stream's
  // messages must stay in order for the receiver's parking (recv_comm.h).
  uint64_t callerNextSeq_ = 0;
  int mostActive_;                    // (mutex) the largest active_ so far
  std::optional<StreamTuner> tuner_;  // (mutex) set when the count adapts
  size_t chunkBytes_;
  size_t minSplitBytes_;
  size_t callerQuietBytes_;        // CallerStreamUse::quietBytes, at most minSplitBytes_
  size_t callerQuietBytesInARun_;  // CallerStreamUse::quietBytesInARun, at most that
  int64_t lastIsendNs_ = 0;        // (mutex) when isend() last took one above quietBytesInARun
  std::shared_ptr<RateLimiter> limiter_;
};

// One chunk sent with zero-copy, from submission until the kernel has let go
// of its pages (its header lives here, as the kernel reads it in place).
// Each is the completion handler of its own sends, so notifications of
// several chunks in flight on one stream reach the right one.
class ZeroCopySlot final : public IoHandler {
 public:
  void onSendDone(int) override {}
  void onRecvDone(int) override {}
  void onZeroCopySent(int result, bool notifyFollows) override;
  void onZeroCopyNotify(bool copied) override;

  SendStream* stream = nullptr;
  Chunk chunk;
  ChunkHeader header{};
  bool inUse = false;     // between taking a chunk and its last notification
  bool allSent = false;   // every byte of the chunk was handed to the kernel
  int notifications = 0;  // still to come for this chunk's sends
};

class SendStream final : public Stream {
 public:
  // Chunks of at least `zeroCopyBytes` go zero-copy unless `zeroCopy` is
  // off or the worker cannot (BAGUA_NET_ZEROCOPY, BAGUA_NET_ZEROCOPY_BYTES).
  SendStream(SendComm* comm, int index, Fd fd, Worker* worker, ZeroCopyMode zeroCopy,
             size_t zeroCopyBytes);

  // Sends the next chunk if this stream is idle and one is waiting.
  void pump();
  // Finishes a chunk whose first `sent` bytes (header included) isend()
  // already wrote on the fast path.
  void resume(Chunk chunk, size_t sent);
  void onSendDone(int result) override;
  void onRecvDone(int) override {}  // send streams never receive
  void onTimer() override;

  // From this stream's zero-copy slots.
  void onSlotSent(ZeroCopySlot* slot, int result, bool notifyFollows);
  void onSlotReleased(ZeroCopySlot* slot, bool copied);

  int fd() const { return fd_.get(); }

 protected:
  bool kernelHoldsBuffers() const override;

 private:
  // Chunks that may await their zero-copy notification at once.
  static constexpr int kZeroCopySlots = 4;

  // Points iov_ at the chunk's header and payload, minus `skip` bytes.
  void prepare(size_t skip);
  void submit();
  // Counts a fully sent (and released) chunk towards its request.
  void credit(const Chunk& chunk);
  // Credits and frees `slot` once it is sent and released.
  void retireIfReleased(ZeroCopySlot* slot);
  ZeroCopySlot* freeSlot();
  void fail(int err);

  SendComm* sendComm_;
  Chunk chunk_;
  ChunkHeader header_{};            // the copy path's header
  ZeroCopySlot* zcSlot_ = nullptr;  // the chunk in progress, when sent with zero-copy
  iovec iov_[2]{};
  int iovcnt_ = 0;
  size_t remaining_ = 0;
  ZeroCopyMode zeroCopyMode_;
  bool zeroCopy_ = false;  // chunks of at least zeroCopyBytes_ go zero-copy
  bool waitingForSlot_ = false;
  size_t zeroCopyBytes_ = 0;
  ZeroCopySlot slots_[kZeroCopySlots];
};

}  // namespace bagua::net
