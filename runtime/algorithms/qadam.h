// QAdam's communication (Bagua's QAdamAlgorithm after its warm-up): each
// parameter's Adam momentum, already updated from the rank's own gradient,
// is averaged across ranks with ByteGrad's 8-bit min-max scatter-reduce and
// allgather (optionally with error feedback). The optimizer math (warm-up
// Adam, the momentum update, the frozen-variance step) is the Python
// QAdamOptimizer's; during the warm-up the caller uses gradient_allreduce.
#pragma once

#include "runtime/algorithms/registry.h"

namespace bagua {

// Its registry entry ("qadam"): a ByteGrad averaging the momentum.
AlgorithmInfo qAdamInfo();

}  // namespace bagua
