// ProcessGroup and PyReducer: construction from Python arguments.
#include "python/src/process_group.h"

#include "runtime/algorithms/hierarchical.h"
#include "runtime/algorithms/registry.h"
#include "runtime/common/error.h"

#if BAGUA_PYTHON_HAVE_GLOO
#include "runtime/comm/gloo_communicator.h"
#include "runtime/ops/cpu_ops.h"
#endif

#if BAGUA_PYTHON_HAVE_NCCL
#include "runtime/comm/nccl_communicator.h"
#include "runtime/ops/cuda_ops.h"
#endif

namespace bagua::python {
namespace {

std::chrono::milliseconds toMs(double seconds) {
  BAGUA_ENFORCE(seconds > 0, "timeout must be positive, got " + std::to_string(seconds));
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

}  // namespace

bool hasNccl() { return BAGUA_PYTHON_HAVE_NCCL != 0; }

std::shared_ptr<ProcessGroup> ProcessGroup::gloo(Store& store, int rank, int size,
                                                 const std::string& prefix,
                                                 const std::string& iface, double timeoutS) {
#if BAGUA_PYTHON_HAVE_GLOO
  GlooCommunicator::Options o;
  o.prefix = prefix;
  o.iface = iface;
  o.timeout = toMs(timeoutS);
  auto group = std::make_shared<ProcessGroup>();
  auto comm = std::make_shared<GlooCommunicator>(store, rank, size, o);
  group->ops_ = std::make_shared<CpuOps>(*comm);
  group->comm_ = comm;
  group->timeout_ = o.timeout;
  return group;
#else
  (void)store, (void)rank, (void)size, (void)prefix, (void)iface, (void)timeoutS;
  BAGUA_THROW(InvalidArgument,
              "this build of bagua has no Gloo support (CPU tensors); it was "
              "built without libgloo");
#endif
}

std::shared_ptr<ProcessGroup> ProcessGroup::nccl(Store& store, int rank, int size, int device,
                                                 const std::string& prefix, double timeoutS) {
#if BAGUA_PYTHON_HAVE_NCCL
  NcclCommunicator::Options o;
  o.prefix = prefix;
  o.timeout = toMs(timeoutS);
  auto group = std::make_shared<ProcessGroup>();
  auto comm = std::make_shared<NcclCommunicator>(store, rank, size, device, o);
  group->ops_ = std::make_shared<CudaOps>(*comm);
  group->comm_ = comm;
  group->timeout_ = o.timeout;
  return group;
#else
  (void)store, (void)rank, (void)size, (void)device, (void)prefix, (void)timeoutS;
  BAGUA_THROW(InvalidArgument,
              "this build of bagua has no NCCL support (CUDA tensors); it was "
              "built without CUDA/NCCL");
#endif
}

PyReducer::PyReducer(
    ProcessGroup& group, Store& store, const std::string& algorithm,
    const std::vector<std::tuple<std::string, uintptr_t, size_t, std::string>>& tensors,
    size_t bucketBytes, double timeoutS, const std::string& prefix, const OptionMap& options,
    ProcessGroup* intra, ProcessGroup* inter, int nodes) {
  std::vector<TensorSpec> specs;
  for (const auto& [name, ptr, numel, dtype] : tensors) {
    specs.push_back(TensorSpec{name, reinterpret_cast<void*>(ptr), numel, parseDType(dtype),
                               group.comm()->device()});
  }
  Reducer::Options o;
  o.bucketBytes = bucketBytes;
  o.timeout = toMs(timeoutS);
  o.storePrefix = prefix;
  std::shared_ptr<Algorithm> made = AlgorithmRegistry::global().create(algorithm, options);
  if (intra == nullptr) {
    BAGUA_ENFORCE(inter == nullptr, "an inter-node group needs an intra-node group");
    reducer_ = std::make_unique<Reducer>(group.comm(), group.ops(), made, std::move(specs), store, o);
    return;
  }
  // Hierarchical: the buckets live on the intra-node communicator; the
  // leaders run the algorithm among the nodes.
  auto average = options.find("average");
  ReduceOp intraOp = average != options.end() && std::holds_alternative<bool>(average->second) &&
                             !std::get<bool>(average->second)
                         ? ReduceOp::kSum
                         : ReduceOp::kAvg;
  auto hierarchical = std::make_shared<Hierarchical>(
      made, inter ? inter->comm() : nullptr, inter ? inter->ops() : nullptr, nodes, intraOp);
  o.checkRank = group.rank();
  o.checkSize = group.size();
  reducer_ = std::make_unique<Reducer>(intra->comm(), intra->ops(), hierarchical, std::move(specs),
                                       store, o);
}

}  // namespace bagua::python
