// The store's wire format: round trips, and strict rejection of anything
// malformed (every truncation, trailing bytes, bad ops, implausible counts,
// random bytes) without reading out of bounds.
#include "runtime/store/store_protocol.h"

#include <gtest/gtest.h>

#include <random>

namespace bagua::store_protocol {
namespace {

std::vector<uint8_t> payloadOf(const std::vector<uint8_t>& frame) {
  return std::vector<uint8_t>(frame.begin() + kHeaderBytes, frame.end());
}

std::vector<Request> sampleRequests() {
  std::vector<Request> out(5);
  out[0].op = Op::kSet;
  out[0].keys = {"a/b"};
  out[0].value = {0, 1, 2, 255};
  out[1].op = Op::kGet;
  out[1].keys = {std::string("nul\0key", 7)};
  out[1].timeoutMs = 1234;
  out[2].op = Op::kAdd;
  out[2].keys = {"counter"};
  out[2].delta = -42;
  out[3].op = Op::kWait;
  out[3].keys = {"x", "", "zz"};
  out[3].timeoutMs = kMaxWaitMs;
  out[4].op = Op::kWait;
  return out;
}

TEST(StoreProtocol, RequestsRoundTrip) {
  for (const Request& r : sampleRequests()) {
    auto frame = encodeRequest(r);
    auto length = decodeHeader(frame.data());
    ASSERT_TRUE(length.has_value()) << opName(r.op);
    EXPECT_EQ(*length, frame.size() - kHeaderBytes);
    auto payload = payloadOf(frame);
    auto back = decodeRequest(payload.data(), payload.size());
    ASSERT_TRUE(back.has_value()) << opName(r.op);
    EXPECT_EQ(back->op, r.op);
    EXPECT_EQ(back->keys, r.keys);
    EXPECT_EQ(back->value, r.value);
    EXPECT_EQ(back->delta, r.delta);
    EXPECT_EQ(back->timeoutMs, r.timeoutMs);
  }
}

TEST(StoreProtocol, ResponsesRoundTrip) {
  Response ok;
  ok.value = {9, 8, 7};
  Response added;
  added.number = -5;
  Response timeout;
  timeout.status = Status::kTimeout;
  timeout.missing = {"k1", "k2"};
  Response error;
  error.status = Status::kError;
  error.message = "bad";
  struct Case {
    Op op;
    Response response;
  };
  for (const Case& c : {Case{Op::kGet, ok}, Case{Op::kAdd, added}, Case{Op::kWait, timeout},
                        Case{Op::kAdd, error}, Case{Op::kSet, Response{}}}) {
    auto payload = payloadOf(encodeResponse(c.op, c.response));
    auto back = decodeResponse(c.op, payload.data(), payload.size());
    ASSERT_TRUE(back.has_value()) << opName(c.op);
    EXPECT_EQ(back->status, c.response.status);
    EXPECT_EQ(back->value, c.response.value);
    EXPECT_EQ(back->number, c.response.number);
    EXPECT_EQ(back->missing, c.response.missing);
    EXPECT_EQ(back->message, c.response.message);
  }
}

TEST(StoreProtocol, HeaderRejectsBadMagicAndOversizeLength) {
  auto frame = encodeRequest(sampleRequests()[0]);
  std::vector<uint8_t> header(frame.begin(), frame.begin() + kHeaderBytes);
  header[0] ^= 1;
  EXPECT_FALSE(decodeHeader(header.data()).has_value());
  header[0] ^= 1;
  uint32_t big = kMaxPayloadBytes + 1;
  for (int i = 0; i < 4; ++i) header[static_cast<size_t>(4 + i)] = uint8_t(big >> (8 * i));
  EXPECT_FALSE(decodeHeader(header.data()).has_value());
  const uint8_t http[kHeaderBytes] = {'G', 'E', 'T', ' ', '/', ' ', 'H', 'T'};
  EXPECT_FALSE(decodeHeader(http).has_value());
}

TEST(StoreProtocol, EveryTruncationAndTrailingByteIsRejected) {
  for (const Request& r : sampleRequests()) {
    auto payload = payloadOf(encodeRequest(r));
    for (size_t n = 0; n < payload.size(); ++n) {
      EXPECT_FALSE(decodeRequest(payload.data(), n).has_value())
          << opName(r.op) << " truncated to " << n << " bytes";
    }
    payload.push_back(0);
    EXPECT_FALSE(decodeRequest(payload.data(), payload.size()).has_value()) << opName(r.op);
  }
}

TEST(StoreProtocol, BadOpCountAndTimeoutAreRejected) {
  const uint8_t unknownOp[] = {99, 0, 0, 0, 0};
  EXPECT_FALSE(decodeRequest(unknownOp, sizeof(unknownOp)).has_value());
  // WAIT claiming 2^32-1 keys in a 12-byte payload.
  const uint8_t hugeCount[] = {4, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_FALSE(decodeRequest(hugeCount, sizeof(hugeCount)).has_value());
  Request get = sampleRequests()[1];
  get.timeoutMs = kMaxWaitMs + 1;
  auto payload = payloadOf(encodeRequest(get));
  EXPECT_FALSE(decodeRequest(payload.data(), payload.size()).has_value());
  const uint8_t badStatus[] = {7};
  EXPECT_FALSE(decodeResponse(Op::kSet, badStatus, sizeof(badStatus)).has_value());
}

// Random and mutated payloads: must decode or be rejected, never crash or
// read past the end (the ASan build checks the latter).
TEST(StoreProtocol, RandomBytesNeverCrash) {
  std::mt19937 rng(1234);
  auto samples = sampleRequests();
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> payload;
    if (i % 2 == 0) {
      payload.resize(rng() % 64);
      for (auto& b : payload) b = uint8_t(rng());
    } else {
      payload = payloadOf(encodeRequest(samples[rng() % samples.size()]));
      payload[rng() % payload.size()] = uint8_t(rng());
    }
    auto heap = std::make_unique<uint8_t[]>(payload.size());
    std::copy(payload.begin(), payload.end(), heap.get());
    accepted += decodeRequest(heap.get(), payload.size()).has_value() ? 1 : 0;
    accepted += decodeResponse(Op(1 + rng() % 4), heap.get(), payload.size()).has_value() ? 1 : 0;
  }
  EXPECT_GT(accepted, 0);  // mutations of values (not lengths) still parse
}

}  // namespace
}  // namespace bagua::store_protocol
