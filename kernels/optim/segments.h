// How one launch covers a list of tensors of mixed sizes: the tensors are
// laid end to end and cut into blocks of at most `chunkElems` elements; a
// block's share of one tensor is a segment (tensor, offset, length). A block
// holds one segment of a large tensor or several small tensors whole, so
// every block has about the same work whatever the sizes. Blocks never cross
// a batch: consecutive tensors of at most `batchElems` elements in total (a
// larger tensor is a batch of its own; 0: one batch). LAMB runs its passes
// batch by batch so that the second pass finds the first one's data in L2.
// Planned once per tensor list on the host (segments_test checks the rules).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace bagua::kernels::optim {

struct Batch {
  uint32_t firstBlock = 0, blocks = 0;
  uint32_t firstTensor = 0, tensors = 0;
};

struct SegmentPlan {
  std::vector<uint32_t> segTensor;    // per segment: the tensor
  std::vector<uint64_t> segOffset;    // per segment: first element in the tensor
  std::vector<uint32_t> segLength;    // per segment: elements (<= chunkElems)
  std::vector<uint32_t> blockBegin;   // per block + 1: its first segment
  std::vector<uint32_t> tensorBegin;  // per tensor + 1: its first segment
  std::vector<Batch> batches;
  size_t blocks() const { return blockBegin.empty() ? 0 : blockBegin.size() - 1; }
};

// Throws std::invalid_argument for chunkElems == 0 or > 2^31, a tensor of 0
// elements, or more than 2^32 - 1 segments or tensors.
SegmentPlan planSegments(const std::vector<size_t>& numel, size_t chunkElems, size_t batchElems);

}  // namespace bagua::kernels::optim
