// The order in which LAMB's persistent kernel (lamb.cu) hands out its work
// when a list has several batches (segments.h). An item is one block of the
// segment plan in pass 1 (moments and norm sums) or pass 2 (the update).
// A batch's pass 2 needs every pass-1 block of the batch done (its tensors'
// trust ratios); it is handed out right after them, blocks in reverse, so
// that it reads what pass 1 touched last while it is still in L2. Between
// the two, `lookahead` pass-1 blocks of the next batch keep the blocks that
// finish early busy while the batch's last pass-1 blocks drain:
//
//   P1(0) | P1(1)[0, L) P2(0) reversed P1(1)[L, n1) | P1(2)[0, L) P2(1) ...
//
// Every item waits only on items handed out before it, so the kernel cannot
// deadlock whatever number of its blocks is resident.
// Planned once per tensor list on the host (lamb_schedule_test).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/optim/segments.h"

namespace bagua::kernels::optim {

constexpr uint32_t kSecondPass = 0x80000000u;  // item bit: pass 2; the rest: the block

struct LambSchedule {
  std::vector<uint32_t> items;       // 2 per block, in hand-out order
  std::vector<uint32_t> blockBatch;  // per block: its batch
};

// Throws std::invalid_argument for 2^31 blocks or more.
LambSchedule planLambSchedule(const std::vector<Batch>& batches, uint32_t lookahead);

}  // namespace bagua::kernels::optim
