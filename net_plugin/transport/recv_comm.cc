// RecvComm (posted receives, chunk placement) and RecvStream (one stream's
// read loop: header, then payload into the user buffer).
//
// Look-ahead: a payload receive also offers the header buffer after the
// payload, so while data streams in, one receive ends a chunk and brings the
// next chunk's header (one receive per chunk instead of two). The header
// buffer is the stream's own, so nothing is read into memory the chunk's
// placement has not decided on.
#include "net_plugin/transport/recv_comm.h"

#include <sys/socket.h>

#include <cerrno>

#include "net_plugin/base/hop_trace.h"
#include "net_plugin/base/log.h"
#include "net_plugin/base/socket_util.h"

namespace bagua::net {

RecvComm::RecvComm(std::vector<Fd> fds, std::string peer, std::shared_ptr<Engine> engine,
                   bool callerStream)
    : Comm(Kind::kRecv, std::move(peer), std::move(engine)), pool_(this, RequestKind::kRecv) {
  size_t data = fds.size() - (callerStream ? 1 : 0);
  if (!fds.empty()) setTraceConn(fds[0].get());
  std::vector<std::unique_ptr<Stream>> streams;
  for (size_t i = 0; i < fds.size(); ++i) {
    bool caller = i >= data;
    Worker* worker = caller ? openCallerEngine() : &nextWorker(*engine_);
    streams.push_back(std::make_unique<RecvStream>(this, static_cast<int>(i), std::move(fds[i]),
                                                   worker, caller));
  }
  startStreams(std::move(streams));
}

Status RecvComm::irecv(void* data, size_t capacity, Request** out) {
  std::vector<RecvStream*> wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The slot of the next sequence number is still held by a receive 64
    // back (the caller test()s out of order while it arrives): try later,
    // as with every request in use, rather than alias it.
    *out = nullptr;
    if (slots_[nextSeq_ % kSlots] != nullptr) return Status::kOk;
    Request* req = pool_.acquire();
    *out = req;
    if (req == nullptr) return Status::kOk;
    req->seq = nextSeq_++;
    req->data = static_cast<uint8_t*>(data);
    req->size = capacity;
    slots_[req->seq % kSlots] = req;
    hoptrace::record(hoptrace::Event::kPost, traceConn(), req->seq, capacity);
    wake.swap(parked_);
  }
  for (RecvStream* s : wake) s->worker().post([s] { s->resume(); });
  if (!wake.empty()) engine_->progress();  // caller-driven: read what waited
  callerProgress();  // the message may be waiting on the caller stream already
  return Status::kOk;
}

RecvComm::Placement RecvComm::placeChunk(RecvStream* stream, const ChunkHeader& h, Request** out,
                                         uint8_t** dest) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed()) return Placement::kFailed;
  Request* req = slots_[h.seq % kSlots];
  if (req == nullptr || req->seq != h.seq) {
    if (h.seq >= nextSeq_) {
      hoptrace::record(hoptrace::Event::kPark, traceConn(), h.seq, h.msgSize);
      parked_.push_back(stream);
      if (!stuckLocked()) return Placement::kPark;
      lock.unlock();
      failStuck();
      return Placement::kPark;
    }
    lock.unlock();
    fail(Status::kRemoteError, "protocol error: chunk for message " + std::to_string(h.seq) +
                                   ", which is not pending (next expected " +
                                   std::to_string(nextSeq_) + ")");
    return Placement::kFailed;
  }
  if (req->msgSize == kUnknownSize) {
    if (h.msgSize > req->size) {
      lock.unlock();
      fail(Status::kInvalidUsage, "message truncated: the peer sent " + std::to_string(h.msgSize) +
                                      " bytes but the posted receive holds only " +
                                      std::to_string(req->size) +
                                      " bytes (mismatched collective sizes across ranks?)");
      return Placement::kFailed;
    }
    req->msgSize = h.msgSize;
  } else if (req->msgSize != h.msgSize) {
    lock.unlock();
    fail(Status::kRemoteError, "protocol error: message " + std::to_string(h.seq) +
                                   " announced as " + std::to_string(req->msgSize) + " and " +
                                   std::to_string(h.msgSize) + " bytes");
    return Placement::kFailed;
  }
  *out = req;
  *dest = req->data + h.offset;
  return Placement::kReady;
}

void RecvComm::chunkArrived(Request* req, size_t len) {
  // Read the target before adding: once another stream completes the
  // message, test() may release and reuse the request.
  size_t target = req->msgSize;
  size_t total = req->doneBytes.fetch_add(len, std::memory_order_acq_rel) + len;
  if (total == target) req->done.store(true, std::memory_order_release);
}

void RecvComm::streamFinished() {
  bool all = false;
  bool stuck = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    all = ++finishedStreams_ == streams_.size();
    stuck = !all && stuckLocked();
  }
  anyStreamFinished_.store(true, std::memory_order_release);
  // Normal at teardown; an error only for receives that can no longer finish.
  if (all) fail(Status::kRemoteError, "the peer closed the connection", /*quiet=*/true);
  if (stuck) failStuck();
}

bool RecvComm::stuckLocked() const {
  // A parked stream waits for a later message and carries its messages in
  // order: it brings nothing more for the receives posted so far, and
  // neither does a stream that met EOF. With every stream one or the
  // other, the parked ones never read the EOF that follows.
  return finishedStreams_ > 0 && finishedStreams_ + parked_.size() == streams_.size() &&
         pool_.anyUnfinished();
}

void RecvComm::failStuck() {
  fail(Status::kRemoteError,
       "the peer closed the connection before a posted receive's message arrived (its other "
       "streams wait for later messages)");
}

void RecvComm::releaseLocked(Request* req) {
  if (slots_[req->seq % kSlots] == req) slots_[req->seq % kSlots] = nullptr;
  pool_.release(req);
}

void RecvStream::start() {
  if (attachToWorker()) readHeader();
}

void RecvStream::readHeader(size_t ahead) {
  state_ = State::kHeader;
  dest_ = headerBytes_;
  want_ = sizeof(ChunkHeader);
  got_ = ahead;
  if (got_ == want_) {
    parseHeader();
  } else {
    readMore();
  }
}

void RecvStream::readMore() {
  recvPending_ = true;
  iov_[0] = {dest_ + got_, want_ - got_};
  int iovcnt = 1;
  if (state_ == State::kPayload) {
    iov_[1] = {headerBytes_, sizeof(headerBytes_)};
    iovcnt = 2;
  }
  requested_ = iov_[0].iov_len + (iovcnt == 2 ? iov_[1].iov_len : 0);
  if (drained_) {
    worker_->recvAfterDrain(fd_.get(), iov_, iovcnt);
  } else {
    worker_->recv(fd_.get(), iov_, iovcnt);
  }
}

void RecvStream::chunkDone() {
  if (header_.msgSize <= kSpinMessageBytes) worker_->smallMessageDone();
  // Before the bytes count: once they complete the message, test() may
  // release the request.
  if (!callerStream_) req_->workerBytes.store(true, std::memory_order_release);
  hoptrace::record(hoptrace::Event::kArrive, recvComm_->traceConn(), header_.seq, header_.len,
                   callerStream_ ? 1 : 0);
  RecvComm::chunkArrived(req_, header_.len);
}

void RecvStream::resume() {
  if (state_ == State::kParked && !closing_) place();
}

void RecvStream::place() {
  switch (recvComm_->placeChunk(this, header_, &req_, &dest_)) {
    case RecvComm::Placement::kPark:
      state_ = State::kParked;
      return;
    case RecvComm::Placement::kFailed:
      stopReading();
      return;
    case RecvComm::Placement::kReady:
      break;
  }
  if (header_.len == 0) {
    chunkDone();
    readHeader(0);
    return;
  }
  state_ = State::kPayload;
  want_ = header_.len;
  got_ = 0;
  readMore();
}

void RecvStream::onEof() {
  if (state_ == State::kHeader && got_ == 0) {
    state_ = State::kFinished;
    recvComm_->streamFinished();
    return;
  }
  state_ = State::kFailed;
  recvComm_->fail(Status::kRemoteError,
                  "the peer closed stream " + std::to_string(index_) + " in the middle of a chunk");
}

void RecvStream::onRecvDone(int result) {
  recvPending_ = false;
  if (settleAfterIo()) return;
  if (result == 0) {
    onEof();
    return;
  }
  if (result < 0) {
    state_ = State::kFailed;
    int err = -result;
    Status status = (err == ECONNRESET || err == ETIMEDOUT || err == EPIPE) ? Status::kRemoteError
                                                                            : Status::kSystemError;
    recvComm_->fail(status, errnoMessage("receive on stream " + std::to_string(index_), err));
    return;
  }
  size_t n = static_cast<size_t>(result);
  // Fewer bytes than asked for: the socket had no more (Worker::recvAfterDrain).
  drained_ = n < requested_;
  size_t ahead = 0;  // bytes of the next header read after the payload
  if (n > want_ - got_) {
    ahead = n - (want_ - got_);
    n = want_ - got_;
  }
  got_ += n;
  if (got_ < want_) {
    readMore();
    return;
  }
  if (state_ == State::kPayload) {
    chunkDone();
    readHeader(ahead);
    return;
  }
  parseHeader();
}

void RecvStream::stopReading() {
  state_ = State::kFailed;
  // The sender must learn of it: its sends on this stream should fail
  // instead of waiting for a reader that will never come (until this rank's
  // communicator is destroyed). A shutdown() only sends a FIN, which a
  // sender that never reads does not see, and a full receive queue answers
  // its window probes without one; a reset is what it sees. The connection
  // is reset on the socket now (socket_util.h: also where a fork()ed child
  // holds copies), while the stream keeps its fd, unconnected, for the close
  // protocol (detach, close) that the comm's close() runs later. Nothing is
  // pending on it: a receive stream never sends, and its receive has just
  // completed.
  endConnection(fd_.get(), /*abortive=*/true);
}

void RecvStream::parseHeader() {
  std::string why;
  if (!parseChunkHeader(headerBytes_, sizeof(headerBytes_), &header_, &why)) {
    recvComm_->fail(Status::kRemoteError, "stream " + std::to_string(index_) + ": " + why);
    stopReading();
    return;
  }
  place();
}

}  // namespace bagua::net
