// Shared argument checks of the communicators (op_args.h).
#include "runtime/comm/op_args.h"

#include <cstdint>

#include "runtime/common/error.h"

namespace bagua {

std::string describeElements(const char* op, size_t count, DType dtype) {
  return std::string(op) + " of " + std::to_string(count) + " " + dtypeName(dtype);
}

std::string describeBytes(const char* op, size_t bytes) {
  return std::string(op) + " of " + std::to_string(bytes) + " bytes";
}

void checkRoot(const char* op, int root, int size) {
  BAGUA_ENFORCE(root >= 0 && root < size, std::string(op) + ": root " + std::to_string(root) +
                                              " is not a rank of " + std::to_string(size));
}

void checkPeer(const char* op, int peer, int rank, int size) {
  BAGUA_ENFORCE(peer >= 0 && peer < size && peer != rank,
                std::string(op) + ": peer " + std::to_string(peer) + " is not another rank of " +
                    std::to_string(size) + " (this is rank " + std::to_string(rank) + ")");
}

void checkRootBuffer(const char* op, const char* name, const void* p, size_t bytes, int rank,
                     int root) {
  BAGUA_ENFORCE(p != nullptr || bytes == 0 || rank != root,
                std::string(op) + ": the root's " + name + " is null");
}

void checkElementCount(const char* op, size_t count, DType dtype, int ranks) {
  const size_t limit = SIZE_MAX / dtypeSize(dtype) / static_cast<size_t>(ranks);
  BAGUA_ENFORCE(count <= limit, std::string(op) + ": " + std::to_string(count) + " " +
                                    dtypeName(dtype) + " elements times " + std::to_string(ranks) +
                                    " ranks do not fit in memory");
}

void checkAlltoallv(int rank, int size, const std::vector<size_t>& sendBytes,
                    const std::vector<size_t>& sendOffsets, const std::vector<size_t>& recvBytes,
                    const std::vector<size_t>& recvOffsets) {
  const size_t n = static_cast<size_t>(size);
  auto checkSize = [n](const char* name, const std::vector<size_t>& v) {
    BAGUA_ENFORCE(v.size() == n, std::string("alltoallv: ") + name + " has " +
                                     std::to_string(v.size()) +
                                     " entries, expected one per rank (" + std::to_string(n) + ")");
  };
  checkSize("sendBytes", sendBytes);
  checkSize("sendOffsets", sendOffsets);
  checkSize("recvBytes", recvBytes);
  checkSize("recvOffsets", recvOffsets);
  for (size_t r = 0; r < n; ++r) {
    BAGUA_ENFORCE(
        sendOffsets[r] <= SIZE_MAX - sendBytes[r] && recvOffsets[r] <= SIZE_MAX - recvBytes[r],
        "alltoallv: the block of rank " + std::to_string(r) + " overflows size_t");
  }
  size_t sent = 0;
  size_t received = 0;
  for (size_t r = 0; r < n; ++r) {
    BAGUA_ENFORCE(sendBytes[r] <= SIZE_MAX - sent && recvBytes[r] <= SIZE_MAX - received,
                  "alltoallv: the byte counts add up past size_t");
    sent += sendBytes[r];
    received += recvBytes[r];
  }
  const size_t self = static_cast<size_t>(rank);
  BAGUA_ENFORCE(sendBytes[self] == recvBytes[self],
                "alltoallv: rank " + std::to_string(rank) + " sends itself " +
                    std::to_string(sendBytes[self]) + " bytes but receives " +
                    std::to_string(recvBytes[self]) + " from itself");
}

bool packedInRankOrder(const std::vector<size_t>& bytes, const std::vector<size_t>& offsets) {
  size_t at = 0;
  for (size_t r = 0; r < bytes.size(); ++r) {
    if (offsets[r] != at) return false;
    at += bytes[r];
  }
  return true;
}

size_t totalBytes(const std::vector<size_t>& bytes) {
  size_t sum = 0;
  for (size_t b : bytes) sum += b;
  return sum;
}

}  // namespace bagua
