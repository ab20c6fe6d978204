// Encoding and validation of the listen handle, hellos and chunk headers.
#include "net_plugin/transport/wire.h"

#include <sys/random.h>

#include <chrono>
#include <cstdio>
#include <cstring>

namespace bagua::net {
namespace {

uint32_t fnv1a(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 16777619u;
  return hash;
}

uint32_t handleChecksum(const ListenHandle& h) {
  return fnv1a(&h, offsetof(ListenHandle, checksum));
}

bool magicOk(uint32_t got, uint32_t want, const char* what, std::string* why) {
  if (got == want) return true;
  if (got == __builtin_bswap32(want)) {
    *why = std::string(what) + " comes from a host of the other byte order";
  } else {
    char text[96];
    snprintf(text, sizeof(text), "%s has bad magic 0x%08x (expected 0x%08x)", what, got, want);
    *why = text;
  }
  return false;
}

}  // namespace

ListenHandle makeListenHandle(const SockAddr& addr, uint16_t nStreams, uint64_t token) {
  ListenHandle h;
  std::memset(&h, 0, sizeof(h));
  h.magic = kHandleMagic;
  h.version = kWireVersion;
  h.nStreams = nStreams;
  h.token = token;
  h.addr = addr;
  h.checksum = handleChecksum(h);
  return h;
}

bool checkListenHandle(const ListenHandle& h, std::string* why) {
  if (!magicOk(h.magic, kHandleMagic, "listen handle", why)) return false;
  if (h.checksum != handleChecksum(h)) {
    *why = "listen handle checksum mismatch (corrupted handle)";
    return false;
  }
  if (h.version != kWireVersion) {
    *why = "listen handle has wire version " + std::to_string(h.version) + ", this plugin speaks " +
           std::to_string(kWireVersion) + " (mixed Bagua-Net versions in one job)";
    return false;
  }
  if (h.nStreams == 0 || h.nStreams > 64) {
    *why = "listen handle asks for " + std::to_string(h.nStreams) + " streams (1..64 allowed)";
    return false;
  }
  if (sockAddrLen(h.addr) == 0) {
    *why = "listen handle has an unknown address family";
    return false;
  }
  return true;
}

Hello makeHello(uint16_t streamIndex, uint16_t nStreams, uint64_t token, uint64_t connId,
                uint16_t flags) {
  Hello h;
  std::memset(&h, 0, sizeof(h));
  h.magic = kHelloMagic;
  h.version = kWireVersion;
  h.streamIndex = streamIndex;
  h.nStreams = nStreams;
  h.token = token;
  h.connId = connId;
  h.flags = flags;
  return h;
}

bool parseHello(const uint8_t* bytes, size_t n, Hello* out, std::string* why) {
  if (n != sizeof(Hello)) {
    *why = "hello has " + std::to_string(n) + " bytes, expected " + std::to_string(sizeof(Hello));
    return false;
  }
  std::memcpy(out, bytes, sizeof(Hello));
  if (!magicOk(out->magic, kHelloMagic, "hello", why)) return false;
  if (out->version != kWireVersion) {
    *why = "hello has wire version " + std::to_string(out->version) + ", this plugin speaks " +
           std::to_string(kWireVersion) + " (mixed Bagua-Net versions in one job)";
    return false;
  }
  if (out->reserved1 != 0) {
    // Zero from every sender of this version: anything else is not ours (or
    // a later version that forgot to bump the wire version).
    *why = "hello has nonzero reserved field " + std::to_string(out->reserved1);
    return false;
  }
  if (out->nStreams == 0 || out->streamIndex >= out->nStreams) {
    *why = "hello names stream " + std::to_string(out->streamIndex) + " of " +
           std::to_string(out->nStreams);
    return false;
  }
  if ((out->flags & ~kHelloCallerStream) != 0) {
    *why = "hello has unknown flags " + std::to_string(out->flags);
    return false;
  }
  if ((out->flags & kHelloCallerStream) != 0 && out->nStreams < 2) {
    *why = "hello announces a caller stream but no data stream";
    return false;
  }
  return true;
}

ChunkHeader makeChunkHeader(uint64_t seq, uint64_t msgSize, uint64_t offset, uint32_t len) {
  return ChunkHeader{kChunkMagic, len, seq, msgSize, offset};
}

bool parseChunkHeader(const uint8_t* bytes, size_t n, ChunkHeader* out, std::string* why) {
  if (n != sizeof(ChunkHeader)) {
    *why = "chunk header has " + std::to_string(n) + " bytes";
    return false;
  }
  std::memcpy(out, bytes, sizeof(ChunkHeader));
  if (!magicOk(out->magic, kChunkMagic, "chunk header", why)) return false;
  if (out->msgSize > kMaxMessageBytes) {
    *why = "chunk header announces a message of " + std::to_string(out->msgSize) + " bytes";
    return false;
  }
  if (out->len > kMaxChunkBytes || out->offset > out->msgSize ||
      out->len > out->msgSize - out->offset || (out->len == 0 && out->msgSize != 0)) {
    *why = "chunk header is inconsistent: offset " + std::to_string(out->offset) + " length " +
           std::to_string(out->len) + " in a message of " + std::to_string(out->msgSize) + " bytes";
    return false;
  }
  return true;
}

uint64_t randomToken() {
  uint64_t value = 0;
  while (value == 0) {
    if (getrandom(&value, sizeof(value), 0) != static_cast<ssize_t>(sizeof(value))) {
      // getrandom only fails before the entropy pool exists; mix the clock in.
      value ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) *
               0x9e3779b97f4a7c15ull;
    }
  }
  return value;
}

}  // namespace bagua::net
