// Encoding and strict decoding of store frames (see store_protocol.h).
#include "runtime/store/store_protocol.h"

#include <utility>

namespace bagua::store_protocol {
namespace {

class Writer {
 public:
  Writer() { out_.resize(kHeaderBytes); }

  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { fixed(v, 4); }
  void u64(uint64_t v) { fixed(v, 8); }
  void bytes(const void* data, size_t size) {
    u32(static_cast<uint32_t>(size));
    const auto* p = static_cast<const uint8_t*>(data);
    out_.insert(out_.end(), p, p + size);
  }
  void str(const std::string& s) { bytes(s.data(), s.size()); }

  // Fills in the header and returns the frame.
  std::vector<uint8_t> finish() {
    uint64_t length = out_.size() - kHeaderBytes;
    for (int i = 0; i < 4; ++i) out_[static_cast<size_t>(i)] = uint8_t(kMagic >> (8 * i));
    for (int i = 0; i < 4; ++i) out_[static_cast<size_t>(4 + i)] = uint8_t(length >> (8 * i));
    return std::move(out_);
  }

 private:
  void fixed(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(uint8_t(v >> (8 * i)));
  }
  std::vector<uint8_t> out_;
};

// Reads fields front to back; any read past the end marks the reader bad
// instead of touching memory, so a caller checks ok() once at the end.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), left_(size) {}

  bool ok() const { return ok_; }
  bool atEnd() const { return ok_ && left_ == 0; }
  size_t left() const { return left_; }

  uint8_t u8() { return uint8_t(fixed(1)); }
  uint32_t u32() { return uint32_t(fixed(4)); }
  uint64_t u64() { return fixed(8); }
  std::vector<uint8_t> bytes() {
    uint32_t n = u32();
    if (!take(n)) return {};
    return std::vector<uint8_t>(p_ - n, p_);
  }
  std::string str() {
    uint32_t n = u32();
    if (!take(n)) return {};
    return std::string(reinterpret_cast<const char*>(p_ - n), n);
  }

 private:
  bool take(size_t n) {
    if (!ok_ || n > left_) {
      ok_ = false;
      return false;
    }
    p_ += n;
    left_ -= n;
    return true;
  }
  uint64_t fixed(int n) {
    if (!take(static_cast<size_t>(n))) return 0;
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(p_[i - n]) << (8 * i);
    return v;
  }

  const uint8_t* p_;
  size_t left_;
  bool ok_ = true;
};

// A key count is plausible only if every key could still have its length.
bool plausibleCount(const Reader& r, uint32_t count) { return count <= r.left() / 4; }

}  // namespace

const char* opName(Op op) {
  switch (op) {
    case Op::kSet:
      return "set";
    case Op::kGet:
      return "get";
    case Op::kAdd:
      return "add";
    case Op::kWait:
      return "wait";
  }
  return "unknown";
}

std::vector<uint8_t> encodeRequest(const Request& request) {
  Writer w;
  w.u8(static_cast<uint8_t>(request.op));
  switch (request.op) {
    case Op::kSet:
      w.str(request.keys.at(0));
      w.bytes(request.value.data(), request.value.size());
      break;
    case Op::kGet:
      w.str(request.keys.at(0));
      w.u64(request.timeoutMs);
      break;
    case Op::kAdd:
      w.str(request.keys.at(0));
      w.u64(static_cast<uint64_t>(request.delta));
      break;
    case Op::kWait:
      w.u32(static_cast<uint32_t>(request.keys.size()));
      for (const auto& k : request.keys) w.str(k);
      w.u64(request.timeoutMs);
      break;
  }
  return w.finish();
}

std::vector<uint8_t> encodeResponse(Op op, const Response& response) {
  Writer w;
  w.u8(static_cast<uint8_t>(response.status));
  switch (response.status) {
    case Status::kOk:
      if (op == Op::kGet) w.bytes(response.value.data(), response.value.size());
      if (op == Op::kAdd) w.u64(static_cast<uint64_t>(response.number));
      break;
    case Status::kTimeout:
      w.u32(static_cast<uint32_t>(response.missing.size()));
      for (const auto& k : response.missing) w.str(k);
      break;
    case Status::kError:
      w.str(response.message);
      break;
  }
  return w.finish();
}

std::optional<uint32_t> decodeHeader(const uint8_t* header) {
  Reader r(header, kHeaderBytes);
  uint32_t magic = r.u32();
  uint32_t length = r.u32();
  if (magic != kMagic || length > kMaxPayloadBytes) return std::nullopt;
  return length;
}

std::optional<Request> decodeRequest(const uint8_t* data, size_t size) {
  Reader r(data, size);
  Request req;
  uint8_t op = r.u8();
  switch (op) {
    case uint8_t(Op::kSet):
      req.keys.push_back(r.str());
      req.value = r.bytes();
      break;
    case uint8_t(Op::kGet):
      req.keys.push_back(r.str());
      req.timeoutMs = r.u64();
      break;
    case uint8_t(Op::kAdd):
      req.keys.push_back(r.str());
      req.delta = static_cast<int64_t>(r.u64());
      break;
    case uint8_t(Op::kWait): {
      uint32_t count = r.u32();
      if (!plausibleCount(r, count)) return std::nullopt;
      for (uint32_t i = 0; i < count && r.ok(); ++i) req.keys.push_back(r.str());
      req.timeoutMs = r.u64();
      break;
    }
    default:
      return std::nullopt;
  }
  req.op = static_cast<Op>(op);
  if (!r.atEnd() || req.timeoutMs > kMaxWaitMs) return std::nullopt;
  return req;
}

std::optional<Response> decodeResponse(Op op, const uint8_t* data, size_t size) {
  Reader r(data, size);
  Response resp;
  uint8_t status = r.u8();
  switch (status) {
    case uint8_t(Status::kOk):
      if (op == Op::kGet) resp.value = r.bytes();
      if (op == Op::kAdd) resp.number = static_cast<int64_t>(r.u64());
      break;
    case uint8_t(Status::kTimeout): {
      uint32_t count = r.u32();
      if (!plausibleCount(r, count)) return std::nullopt;
      for (uint32_t i = 0; i < count && r.ok(); ++i) resp.missing.push_back(r.str());
      break;
    }
    case uint8_t(Status::kError):
      resp.message = r.str();
      break;
    default:
      return std::nullopt;
  }
  resp.status = static_cast<Status>(status);
  if (!r.atEnd()) return std::nullopt;
  return resp;
}

}  // namespace bagua::store_protocol
