// The receiving side of a connection. irecv() posts a buffer under the next
// sequence number; each stream reads a chunk header, asks the comm where the
// chunk goes (placeChunk), and reads the payload straight into the posted
// buffer at its offset: no staging copy.
//
// A header for a message whose receive is not posted yet parks its stream:
// the stream stops reading (TCP flow control then holds the sender back)
// until irecv() posts that message. Chunks of a message always precede those
// of later messages on each stream, so parking cannot deadlock.
//
// End of stream: a stream that reaches EOF between chunks is finished; when
// every stream has finished, unfinished and future receives fail ("peer
// closed"). EOF inside a chunk is an error at once.
#pragma once

#include <atomic>
#include <cstdint>

#include <array>

#include "net_plugin/base/socket_util.h"
#include "net_plugin/transport/comm.h"
#include "net_plugin/transport/stream.h"
#include "net_plugin/transport/wire.h"

namespace bagua::net {

class RecvStream;

class RecvComm final : public Comm {
 public:
  // With `callerStream`, the last of `fds` is the caller stream: it belongs
  // to the process's caller-driven engine, which irecv() and test() turn.
  RecvComm(std::vector<Fd> fds, std::string peer, std::shared_ptr<Engine> engine,
           bool callerStream);

  // Posts a receive of up to `capacity` bytes. *req is nullptr when all
  // requests are in use. Thread-safe.
  Status irecv(void* data, size_t capacity, Request** req);

  enum class Placement { kReady, kPark, kFailed };
  // For streams: where the chunk `h` goes. kReady sets *req and *dest;
  // kPark remembers the stream until its message is posted; kFailed means
  // the comm failed (e.g. the message is larger than the posted buffer).
  Placement placeChunk(RecvStream* stream, const ChunkHeader& h, Request** req, uint8_t** dest);

  // For streams: `len` payload bytes of `req` have arrived.
  static void chunkArrived(Request* req, size_t len);

  // For streams: this stream met EOF between chunks.
  void streamFinished();

 protected:
  bool busyLocked() const override { return pool_.anyUnfinished(); }
  void releaseLocked(Request* req) override;
  // A message a chunk of which arrived on a worker stream is not on the
  // caller stream (our senders put whole messages there, one chunk each);
  // one whose chunks arrive there keeps the loop turning to its end. Once a
  // stream has met EOF, every wait turns it: the caller stream's own EOF,
  // the last one that fails the comm, is read only there.
  bool mayUseCallerStream(const Request* req) const override {
    return !req->workerBytes.load(std::memory_order_acquire) ||
           anyStreamFinished_.load(std::memory_order_acquire);
  }

 private:
  // Under mutex_: some streams met EOF, every other one is parked, and a
  // posted receive is unfinished: it never will be.
  bool stuckLocked() const;
  void failStuck();

  // Receives in flight by sequence number; NCCL allows 32, and irecv() waits
  // while the next sequence's slot is held (a receive 64 back, unfinished or
  // not yet collected by test()), so slots never alias.
  static constexpr size_t kSlots = 2 * RequestPool::kCapacity;

  RequestPool pool_;
  std::array<Request*, kSlots> slots_{};  // (mutex)
  uint64_t nextSeq_ = 0;                  // (mutex)
  std::vector<RecvStream*> parked_;       // (mutex)
  size_t finishedStreams_ = 0;            // (mutex)
  std::atomic<bool> anyStreamFinished_{false};
};

class RecvStream final : public Stream {
 public:
  // `callerStream`: this is the comm's caller stream (read inside test()).
  RecvStream(RecvComm* comm, int index, Fd fd, Worker* worker, bool callerStream)
      : Stream(comm, index, std::move(fd), worker), recvComm_(comm), callerStream_(callerStream) {}

  void start() override;
  // Retries a parked header after irecv() posted more receives.
  void resume();
  void onSendDone(int) override {}  // receive streams never send
  void onRecvDone(int result) override;

 private:
  enum class State { kHeader, kPayload, kParked, kFinished, kFailed };

  // Starts on the next chunk's header, of which `ahead` bytes already
  // arrived with the previous payload.
  void readHeader(size_t ahead = 0);
  // Reads on: after a short receive (drained_) at the socket's next edge
  // (Worker::recvAfterDrain), else now.
  void readMore();
  // Parses a complete header, then places the chunk.
  void parseHeader();
  void place();
  // The comm failed here (a bad header, a truncated message) or elsewhere:
  // reads no more and shuts the socket down, so the peer sees an error.
  void stopReading();
  void onEof();
  // header_'s chunk is in place: credits it to its request, and tells the
  // worker when the message is small (its spin is for those).
  void chunkDone();

  RecvComm* recvComm_;
  bool callerStream_;
  State state_ = State::kHeader;
  uint8_t headerBytes_[sizeof(ChunkHeader)]{};
  ChunkHeader header_{};
  Request* req_ = nullptr;
  uint8_t* dest_ = nullptr;  // where the current read goes
  size_t want_ = 0;          // bytes the current state needs
  size_t got_ = 0;           // bytes of them already read
  size_t requested_ = 0;     // bytes the pending receive asked for
  bool drained_ = false;     // the last receive came back short of requested_
  iovec iov_[2]{};           // the pending receive's buffers
};

}  // namespace bagua::net
