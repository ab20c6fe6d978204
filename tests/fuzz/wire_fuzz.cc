// libFuzzer target for everything the plugin parses from the outside: the
// listen handle (from NCCL's bootstrap), hellos and chunk headers (from the
// network). The first byte picks the parser; the rest is its input. A parse
// may succeed or fail; it must never crash, read out of bounds, or accept a
// header that breaks the invariants the data path relies on.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "net_plugin/transport/wire.h"

using namespace bagua::net;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void fuzzChunkHeader(const uint8_t* data, size_t size) {
  ChunkHeader h{};
  std::string why;
  if (parseChunkHeader(data, size, &h, &why)) {
    // Invariants RecvStream::place() relies on to write inside the buffer.
    check(h.offset <= h.msgSize && h.len <= h.msgSize - h.offset);
    check(h.len <= kMaxChunkBytes && h.msgSize <= kMaxMessageBytes);
    check(h.len > 0 || h.msgSize == 0);
  } else {
    check(!why.empty());
  }
}

void fuzzHello(const uint8_t* data, size_t size) {
  Hello h{};
  std::string why;
  if (parseHello(data, size, &h, &why)) {
    check(h.streamIndex < h.nStreams);
  } else {
    check(!why.empty());
  }
}

void fuzzHandle(const uint8_t* data, size_t size) {
  ListenHandle h{};
  std::memcpy(&h, data, size < sizeof(h) ? size : sizeof(h));
  std::string why;
  if (checkListenHandle(h, &why)) {
    check(h.nStreams >= 1 && h.nStreams <= 64 && sockAddrLen(h.addr) > 0);
    (void)sockAddrToString(h.addr);
  } else {
    check(!why.empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 3) {
    case 0:
      fuzzChunkHeader(data + 1, size - 1);
      break;
    case 1:
      fuzzHello(data + 1, size - 1);
      break;
    default:
      fuzzHandle(data + 1, size - 1);
      break;
  }
  return 0;
}
