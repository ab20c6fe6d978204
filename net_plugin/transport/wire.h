// What travels on the wire and in NCCL's 128-byte listen handle.
//
// 1. ListenHandle: written by listen() into NCCL's handle buffer, shipped to
//    the peer by NCCL's bootstrap, read by connect(). It carries the address,
//    the stream count and a random token; a checksum catches corruption.
// 2. Hello: the first 32 bytes on every TCP stream, sender to receiver. A
//    stream is trusted only after its hello presents the listen token.
// 3. ChunkHeader: precedes every chunk of every message. Chunks are
//    self-describing (sequence, offset, length, message size), so any stream
//    may carry any chunk and the receiver places it by offset.
// All integers are in the sender's byte order; a byte-swapped magic is
// reported as such (mixed-endian jobs are not supported).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "net_plugin/base/sock_addr.h"
#include "net_plugin/nccl/net_types.h"

namespace bagua::net {

inline constexpr uint16_t kWireVersion = 2;
inline constexpr uint32_t kHandleMagic = 0x42474e48;  // "BGNH"
inline constexpr uint32_t kHelloMagic = 0x42474e4f;   // "BGNO"
inline constexpr uint32_t kChunkMagic = 0x42474e43;   // "BGNC"
inline constexpr uint64_t kMaxMessageBytes = NCCL_MAX_NET_SIZE_BYTES;
inline constexpr uint32_t kMaxChunkBytes = 64u << 20;
// Hello flag: the connection's last stream is its caller stream (no worker
// owns it on either side; BAGUA_NET_CALLER_STREAM).
inline constexpr uint16_t kHelloCallerStream = 1;

struct ListenHandle {
  uint32_t magic;
  uint16_t version;
  uint16_t nStreams;
  uint64_t token;
  SockAddr addr;
  uint32_t checksum;  // FNV-1a of every byte above
  // Sender-local: set by the first connect() call on this handle so that the
  // next calls (NCCL passes the same handle pointer) find their connect state.
  uint64_t connectId;
};
static_assert(sizeof(ListenHandle) <= NCCL_NET_HANDLE_MAXSIZE, "handle must fit NCCL's buffer");

struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t streamIndex;
  uint16_t nStreams;  // of the connection, the caller stream included
  uint16_t flags;     // kHelloCallerStream
  uint32_t reserved1;
  uint64_t token;
  uint64_t connId;  // random per connecting send comm; groups its streams
};
static_assert(sizeof(Hello) == 32, "hello is 32 bytes on the wire");

struct ChunkHeader {
  uint32_t magic;
  uint32_t len;      // payload bytes that follow this header
  uint64_t seq;      // message sequence number on this connection, from 0
  uint64_t msgSize;  // total bytes of the message
  uint64_t offset;   // byte offset of this chunk within the message
};
static_assert(sizeof(ChunkHeader) == 32, "chunk header is 32 bytes on the wire");

// Fills magic, version, stream count, token, address and checksum.
ListenHandle makeListenHandle(const SockAddr& addr, uint16_t nStreams, uint64_t token);

// Validates a handle received from NCCL. On failure returns false and says
// why in *why (e.g. "bad magic", "checksum mismatch").
bool checkListenHandle(const ListenHandle& handle, std::string* why);

Hello makeHello(uint16_t streamIndex, uint16_t nStreams, uint64_t token, uint64_t connId,
                uint16_t flags = 0);

// Parses a hello from exactly sizeof(Hello) bytes; checks magic, version,
// stream index and flags (a caller stream needs a data stream beside it).
bool parseHello(const uint8_t* bytes, size_t n, Hello* out, std::string* why);

ChunkHeader makeChunkHeader(uint64_t seq, uint64_t msgSize, uint64_t offset, uint32_t len);

// Parses a chunk header from exactly sizeof(ChunkHeader) bytes and checks it
// is self-consistent: magic, len <= kMaxChunkBytes, offset + len <= msgSize,
// msgSize <= kMaxMessageBytes, and a zero-length chunk only for an empty message.
bool parseChunkHeader(const uint8_t* bytes, size_t n, ChunkHeader* out, std::string* why);

// A random 64-bit value from getrandom(2); never 0.
uint64_t randomToken();

}  // namespace bagua::net
