// The sending side of a connection: isend() queues messages; each stream,
// whenever it has room, takes the next chunk of the oldest unsent message
// (dynamic balancing: a slow stream simply takes fewer chunks).
//
// Chunking: a message of at most minSplitBytes goes whole as one chunk on
// the first idle stream (lowest latency, one system call); a larger one is
// cut into chunks of at most chunkBytes. A zero-byte message is one header.
#pragma once

#include <deque>

#include "net_plugin/core/comm.h"
#include "net_plugin/core/socket_util.h"
#include "net_plugin/core/stream.h"
#include "net_plugin/core/wire.h"

namespace bagua::net {

// A piece of a message handed to one stream.
struct Chunk {
  Request* req = nullptr;
  uint64_t offset = 0;
  uint32_t len = 0;
};

class SendComm final : public Comm {
 public:
  // Takes the connected stream sockets (index = stream number).
  SendComm(std::vector<Fd> fds, std::string peer, std::shared_ptr<Engine> engine);

  // Queues a message. *req is nullptr when all requests are in use (NCCL
  // retries later). Thread-safe.
  Status isend(void* data, size_t size, Request** req);

  // For streams: the next chunk to send. Returns false, and remembers the
  // stream as idle so the next isend() wakes it, when there is none.
  bool takeChunk(int stream, Chunk* out);

 protected:
  bool busyLocked() const override { return pool_.anyUnfinished(); }
  void releaseLocked(Request* req) override { pool_.release(req); }

 private:
  RequestPool pool_;
  std::deque<Request*> queue_;  // (mutex) messages with chunks not yet taken
  uint64_t cursor_ = 0;         // (mutex) bytes of queue_.front() already taken
  uint64_t nextSeq_ = 0;        // (mutex)
  std::vector<bool> idle_;      // (mutex) per stream: waiting for work
  size_t chunkBytes_;
  size_t minSplitBytes_;
};

class SendStream final : public Stream {
 public:
  SendStream(SendComm* comm, int index, Fd fd, Worker* worker)
      : Stream(comm, index, std::move(fd), worker), sendComm_(comm) {}

  // Sends the next chunk if this stream is idle and one is waiting.
  void pump();
  void onSendDone(int result) override;
  void onRecvDone(int) override {}  // send streams never receive

 private:
  void submit();

  SendComm* sendComm_;
  Chunk chunk_;
  ChunkHeader header_{};
  iovec iov_[2]{};
  int iovcnt_ = 0;
  size_t remaining_ = 0;
};

}  // namespace bagua::net
