// LAMB's hand-out order (lamb_schedule.h).
#include "kernels/optim/lamb_schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace bagua::kernels::optim {

LambSchedule planLambSchedule(const std::vector<Batch>& batches, uint32_t lookahead) {
  const uint64_t blocks =
      batches.empty() ? 0 : uint64_t{batches.back().firstBlock} + batches.back().blocks;
  if (blocks >= kSecondPass) {
    throw std::invalid_argument("planLambSchedule: " + std::to_string(blocks) +
                                " blocks; at most 2^31 - 1 (an item keeps its pass in bit 31)");
  }
  LambSchedule s;
  std::vector<uint32_t> firstPassDone(batches.size(), 0);  // pass-1 blocks handed out
  // Pass-1 blocks of batch b up to `upTo` (of its blocks).
  auto firstPass = [&](size_t b, uint32_t upTo) {
    const Batch& batch = batches[b];
    for (; firstPassDone[b] < std::min(upTo, batch.blocks); ++firstPassDone[b]) {
      s.items.push_back(batch.firstBlock + firstPassDone[b]);
    }
  };
  for (size_t b = 0; b < batches.size(); ++b) {
    const Batch& batch = batches[b];
    s.blockBatch.insert(s.blockBatch.end(), batch.blocks, static_cast<uint32_t>(b));
    firstPass(b, batch.blocks);  // the rest of it (all of batch 0)
    if (b + 1 < batches.size()) firstPass(b + 1, lookahead);
    for (uint32_t k = batch.blocks; k-- > 0;)
      s.items.push_back(kSecondPass | (batch.firstBlock + k));
  }
  return s;
}

}  // namespace bagua::kernels::optim
