// Wire format: listen handle, hello and chunk header encode and validate.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>

#include "net_plugin/transport/wire.h"

namespace bagua::net {
namespace {

SockAddr loopback(uint16_t port) {
  SockAddr a{};
  a.v4.sin_family = AF_INET;
  a.v4.sin_port = htons(port);
  a.v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

TEST(ListenHandle, RoundTripsAndFitsNcclBuffer) {
  ListenHandle h = makeListenHandle(loopback(1234), 4, 0xabcdef);
  std::string why;
  EXPECT_TRUE(checkListenHandle(h, &why)) << why;
  EXPECT_LE(sizeof(h), static_cast<size_t>(NCCL_NET_HANDLE_MAXSIZE));
  EXPECT_EQ(sockAddrToString(h.addr), "127.0.0.1:1234");
}

TEST(ListenHandle, CarriesFullIpv6Address) {
  SockAddr a{};
  a.v6.sin6_family = AF_INET6;
  a.v6.sin6_port = htons(7);
  inet_pton(AF_INET6, "2001:db8::1234:5678:9abc", &a.v6.sin6_addr);
  a.v6.sin6_scope_id = 3;
  ListenHandle h = makeListenHandle(a, 2, 1);
  std::string why;
  ASSERT_TRUE(checkListenHandle(h, &why)) << why;
  EXPECT_EQ(std::memcmp(&h.addr.v6, &a.v6, sizeof(sockaddr_in6)), 0);
  EXPECT_EQ(sockAddrToString(h.addr), "[2001:db8::1234:5678:9abc]:7");
}

TEST(ListenHandle, CorruptionIsDetected) {
  ListenHandle good = makeListenHandle(loopback(1), 4, 99);
  std::string why;
  for (size_t byte = 0; byte < offsetof(ListenHandle, connectId); ++byte) {
    ListenHandle h = good;
    reinterpret_cast<uint8_t*>(&h)[byte] ^= 0x40;
    EXPECT_FALSE(checkListenHandle(h, &why)) << "flipped byte " << byte;
  }
  ListenHandle zero{};
  EXPECT_FALSE(checkListenHandle(zero, &why));
  EXPECT_NE(why.find("magic"), std::string::npos) << why;
}

TEST(Hello, ValidatesMagicVersionAndStreamIndex) {
  Hello h = makeHello(2, 4, 11, 22);
  Hello out{};
  std::string why;
  EXPECT_TRUE(parseHello(reinterpret_cast<uint8_t*>(&h), sizeof(h), &out, &why)) << why;
  EXPECT_EQ(out.streamIndex, 2);
  EXPECT_EQ(out.connId, 22u);

  Hello bad = makeHello(4, 4, 11, 22);  // index out of range
  EXPECT_FALSE(parseHello(reinterpret_cast<uint8_t*>(&bad), sizeof(bad), &out, &why));
  Hello swapped = h;
  swapped.magic = __builtin_bswap32(kHelloMagic);
  EXPECT_FALSE(parseHello(reinterpret_cast<uint8_t*>(&swapped), sizeof(swapped), &out, &why));
  EXPECT_NE(why.find("byte order"), std::string::npos) << why;
  const char garbage[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n....";
  EXPECT_FALSE(parseHello(reinterpret_cast<const uint8_t*>(garbage), sizeof(Hello), &out, &why));
}

TEST(Hello, AnotherVersionIsNamedWithOursAndTheLikelyCause) {
  Hello h = makeHello(0, 1, 11, 22);
  h.version = kWireVersion + 1;
  Hello out{};
  std::string why;
  EXPECT_FALSE(parseHello(reinterpret_cast<uint8_t*>(&h), sizeof(h), &out, &why));
  EXPECT_NE(why.find("wire version " + std::to_string(kWireVersion + 1) + ", this plugin speaks " +
                     std::to_string(kWireVersion)),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("mixed Bagua-Net versions"), std::string::npos) << why;
}

TEST(Hello, ANonzeroReservedFieldIsRejected) {
  Hello h = makeHello(0, 1, 11, 22);
  h.reserved1 = 7;
  Hello out{};
  std::string why;
  EXPECT_FALSE(parseHello(reinterpret_cast<uint8_t*>(&h), sizeof(h), &out, &why));
  EXPECT_NE(why.find("nonzero reserved field 7"), std::string::npos) << why;
}

TEST(Hello, CarriesTheCallerStreamFlagAndRejectsUnknownFlags) {
  Hello h = makeHello(1, 2, 11, 22, kHelloCallerStream);
  Hello out{};
  std::string why;
  ASSERT_TRUE(parseHello(reinterpret_cast<uint8_t*>(&h), sizeof(h), &out, &why)) << why;
  EXPECT_EQ(out.flags, kHelloCallerStream);
  Hello alone = makeHello(0, 1, 11, 22, kHelloCallerStream);  // no data stream beside it
  EXPECT_FALSE(parseHello(reinterpret_cast<uint8_t*>(&alone), sizeof(alone), &out, &why));
  EXPECT_NE(why.find("no data stream"), std::string::npos) << why;
  Hello unknown = makeHello(0, 2, 11, 22, 0x8000);
  EXPECT_FALSE(parseHello(reinterpret_cast<uint8_t*>(&unknown), sizeof(unknown), &out, &why));
  EXPECT_NE(why.find("unknown flags"), std::string::npos) << why;
}

TEST(ChunkHeader, AcceptsConsistentHeaders) {
  ChunkHeader out{};
  std::string why;
  for (auto h : {makeChunkHeader(0, 0, 0, 0), makeChunkHeader(5, 100, 40, 60),
                 makeChunkHeader(1, 1ull << 40, (1ull << 40) - 4096, 4096)}) {
    EXPECT_TRUE(parseChunkHeader(reinterpret_cast<uint8_t*>(&h), sizeof(h), &out, &why)) << why;
  }
}

TEST(ChunkHeader, RejectsInconsistentHeaders) {
  ChunkHeader out{};
  std::string why;
  for (auto h : {makeChunkHeader(0, 100, 90, 20),   // past the end
                 makeChunkHeader(0, 100, 101, 0),   // offset past the end
                 makeChunkHeader(0, 100, 0, 0),     // empty chunk of a non-empty message
                 makeChunkHeader(0, ~0ull, 0, 16),  // absurd message size
                 makeChunkHeader(0, 1ull << 30, 0, (64u << 20) + 1)}) {  // chunk too large
    EXPECT_FALSE(parseChunkHeader(reinterpret_cast<uint8_t*>(&h), sizeof(h), &out, &why));
  }
  ChunkHeader h = makeChunkHeader(0, 10, 0, 10);
  h.magic = 0;
  EXPECT_FALSE(parseChunkHeader(reinterpret_cast<uint8_t*>(&h), sizeof(h), &out, &why));
  EXPECT_FALSE(parseChunkHeader(reinterpret_cast<uint8_t*>(&h), sizeof(h) - 1, &out, &why));
}

TEST(RandomToken, IsNeverZeroAndVaries) {
  uint64_t a = randomToken();
  uint64_t b = randomToken();
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace bagua::net
