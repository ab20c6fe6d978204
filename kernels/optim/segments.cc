// Segment planning of the multi-tensor kernels (segments.h).
#include "kernels/optim/segments.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace bagua::kernels::optim {
namespace {

constexpr size_t kMaxIndex = std::numeric_limits<uint32_t>::max();

void checkIndex(size_t n, const char* what) {
  if (n >= kMaxIndex) {
    throw std::invalid_argument(std::string("planSegments: ") + std::to_string(n) + " " + what +
                                "; at most 2^32 - 2");
  }
}

}  // namespace

SegmentPlan planSegments(const std::vector<size_t>& numel, size_t chunkElems, size_t batchElems) {
  if (chunkElems == 0 || chunkElems > (size_t{1} << 31)) {
    throw std::invalid_argument("planSegments: chunkElems " + std::to_string(chunkElems) +
                                "; expected 1 .. 2^31");
  }
  checkIndex(numel.size(), "tensors");
  SegmentPlan plan;
  plan.blockBegin.push_back(0);
  size_t inBlock = 0;  // elements of the open block
  size_t inBatch = 0;  // elements of the open batch
  Batch batch;
  auto closeBlock = [&] {
    if (inBlock == 0) return;
    checkIndex(plan.segTensor.size(), "segments");
    plan.blockBegin.push_back(static_cast<uint32_t>(plan.segTensor.size()));
    inBlock = 0;
  };
  auto closeBatch = [&](uint32_t nextTensor) {
    closeBlock();
    batch.blocks = static_cast<uint32_t>(plan.blocks()) - batch.firstBlock;
    batch.tensors = nextTensor - batch.firstTensor;
    if (batch.tensors > 0) plan.batches.push_back(batch);
    batch = Batch{static_cast<uint32_t>(plan.blocks()), 0, nextTensor, 0};
    inBatch = 0;
  };
  for (size_t t = 0; t < numel.size(); ++t) {
    if (numel[t] == 0) {
      throw std::invalid_argument("planSegments: tensor " + std::to_string(t) + " has 0 elements");
    }
    if (batchElems > 0 && inBatch > 0 && inBatch + numel[t] > batchElems) {
      closeBatch(static_cast<uint32_t>(t));
    }
    plan.tensorBegin.push_back(static_cast<uint32_t>(plan.segTensor.size()));
    for (size_t offset = 0; offset < numel[t];) {
      const size_t length = std::min(numel[t] - offset, chunkElems - inBlock);
      plan.segTensor.push_back(static_cast<uint32_t>(t));
      plan.segOffset.push_back(offset);
      plan.segLength.push_back(static_cast<uint32_t>(length));
      offset += length;
      inBlock += length;
      if (inBlock == chunkElems) closeBlock();
    }
    inBatch += numel[t];
  }
  closeBatch(static_cast<uint32_t>(numel.size()));
  checkIndex(plan.segTensor.size(), "segments");
  plan.tensorBegin.push_back(static_cast<uint32_t>(plan.segTensor.size()));
  return plan;
}

}  // namespace bagua::kernels::optim
