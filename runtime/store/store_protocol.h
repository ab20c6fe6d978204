// Wire format of the TCP store: length-prefixed binary frames, one request
// and one response at a time per connection. No Asio here, so the framing is
// testable (and fuzzable) without a socket. Layout, all integers little-endian:
//
//   frame    = magic:u32 ("BGS1") | length:u32 | payload[length]
//   request  = op:u8 | fields of the op
//     SET    = key:str | value:bytes
//     GET    = key:str | timeout_ms:u64
//     ADD    = key:str | delta:i64
//     WAIT   = count:u32 | key:str * count | timeout_ms:u64
//   response = status:u8 | fields of the status
//     OK     = value:bytes (GET), new value:i64 (ADD), nothing (SET, WAIT)
//     TIMEOUT= count:u32 | missing key:str * count
//     ERROR  = message:str
//   str, bytes = length:u32 | data
//
// A payload that does not parse exactly (bad op, short field, trailing bytes,
// a length beyond the frame) is malformed: the server closes the connection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bagua::store_protocol {

constexpr uint32_t kMagic = 0x31534742;  // "BGS1" read as little-endian bytes
constexpr size_t kHeaderBytes = 8;
// Largest payload either side accepts; a larger length is malformed.
constexpr uint32_t kMaxPayloadBytes = 64u << 20;
// Largest server-side wait a request may ask for (one day), so a timer never
// overflows.
constexpr uint64_t kMaxWaitMs = 24ull * 3600 * 1000;

enum class Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kWait = 4 };
enum class Status : uint8_t { kOk = 0, kTimeout = 1, kError = 2 };

struct Request {
  Op op = Op::kSet;
  std::vector<std::string> keys;  // one key except for WAIT
  std::vector<uint8_t> value;     // SET
  int64_t delta = 0;              // ADD
  uint64_t timeoutMs = 0;         // GET, WAIT
};

struct Response {
  Status status = Status::kOk;
  std::vector<uint8_t> value;        // OK of GET
  int64_t number = 0;                // OK of ADD
  std::vector<std::string> missing;  // TIMEOUT
  std::string message;               // ERROR
};

// Human name of an op ("set", "get", ...), for messages.
const char* opName(Op op);

// Encodes a whole frame (header + payload) for `request`.
std::vector<uint8_t> encodeRequest(const Request& request);
// Encodes a whole frame for `response`; `op` is the request it answers.
std::vector<uint8_t> encodeResponse(Op op, const Response& response);

// Parses an 8-byte header; returns the payload length, or nullopt when the
// magic is wrong or the length exceeds kMaxPayloadBytes.
std::optional<uint32_t> decodeHeader(const uint8_t* header);
// Parses a request payload; nullopt when malformed.
std::optional<Request> decodeRequest(const uint8_t* data, size_t size);
// Parses a response payload to a request of kind `op`; nullopt when malformed.
std::optional<Response> decodeResponse(Op op, const uint8_t* data, size_t size);

}  // namespace bagua::store_protocol
