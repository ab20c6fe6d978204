// Argument checks and descriptions shared by the communicators, so Gloo and
// NCCL reject the same calls with the same InvalidArgument messages (naming
// the operation, the bad value and what was expected) before anything is
// enqueued.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/comm/types.h"

namespace bagua {

// "allreduce of 4096 float32".
std::string describeElements(const char* op, size_t count, DType dtype);
// "gather of 64 bytes".
std::string describeBytes(const char* op, size_t bytes);

// 0 <= root < size ("reduce: root 5 is not a rank of 4").
void checkRoot(const char* op, int root, int size);
// 0 <= peer < size and peer != rank ("send: peer 3 is not another rank of 2").
void checkPeer(const char* op, int peer, int rank, int size);
// The root's buffer `name` is not null when there are bytes to move
// ("gather: the root's out is null").
void checkRootBuffer(const char* op, const char* name, const void* p, size_t bytes, int rank,
                     int root);
// `count` elements of `dtype`, `ranks` times over, fit in size_t bytes.
void checkElementCount(const char* op, size_t count, DType dtype, int ranks);

// The per-peer byte counts and offsets of alltoallv: four vectors of `size`
// entries, offset + bytes without overflow, and as much received from this
// rank as sent to it.
void checkAlltoallv(int rank, int size, const std::vector<size_t>& sendBytes,
                    const std::vector<size_t>& sendOffsets, const std::vector<size_t>& recvBytes,
                    const std::vector<size_t>& recvOffsets);

// Whether offsets[r] is the sum of bytes[0..r) for every r (blocks packed in
// rank order without gaps).
bool packedInRankOrder(const std::vector<size_t>& bytes, const std::vector<size_t>& offsets);

// Sum of `bytes`.
size_t totalBytes(const std::vector<size_t>& bytes);

}  // namespace bagua
