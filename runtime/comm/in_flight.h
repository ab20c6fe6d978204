// Buffers of work that outlived its owner's wait. A destructor that gave up
// waiting for a collective (its timeout passed: a peer is late or gone) must
// not free what the collective still reads and writes: the communicator runs
// it until the peers arrive or its own timeout ends it. drainOrKeep() waits
// for the work once more (an owner passes its last operations and a fresh
// fence, which finishes after everything queued before it), then keeps
// whatever is given for the rest of the process if some work is still
// running (a leak, bounded by the failures, instead of a use after free).
// Tasks that write into the caller's tensors (copy-backs, weight updates)
// still run when the late peer arrives: that memory is the caller's.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/work.h"
#include "runtime/ops/device_ops.h"

namespace bagua {

// True once `work` finished, successfully or not.
bool finished(Work& work);

// Waits for each of `works` in turn (up to `timeout` each; works of one
// communicator finish in order, so it stops at the first still running); if
// one is, `keep` is never released and one line on stderr says so, naming
// `owner`. Never throws.
void drainOrKeep(const std::vector<std::shared_ptr<Work>>& works, std::chrono::milliseconds timeout,
                 std::shared_ptr<void> keep, const std::string& owner);

// The same with a teardown fence queued on `ops` after `works`: it finishes
// after everything the owner queued (a wait() that threw forgets its works).
// A stopped communicator takes no fence: what it had queued has run.
void drainOrKeep(DeviceOps& ops, std::vector<std::shared_ptr<Work>> works,
                 std::chrono::milliseconds timeout, std::shared_ptr<void> keep,
                 const std::string& owner);

}  // namespace bagua
