// PyReducer: the Reducer from Python arguments, flat or hierarchical.
#include "python/src/reducer_binding.h"

#include <nanobind/nanobind.h>

#include "runtime/algorithms/hierarchical.h"
#include "runtime/common/error.h"

namespace bagua::python {

PyReducer::PyReducer(
    ProcessGroup& group, Store& store, const std::string& algorithm,
    const std::vector<std::tuple<std::string, uintptr_t, size_t, std::string>>& tensors,
    size_t bucketBytes, double timeoutS, const std::string& prefix, const OptionMap& options,
    ProcessGroup* intra, ProcessGroup* inter, int nodes) {
  device_ = group.comm()->device();
  std::vector<TensorSpec> specs = tensorSpecs(tensors, device_);
  Reducer::Options o;
  o.bucketBytes = bucketBytes;
  o.timeout = timeoutFromSeconds(timeoutS);
  o.storePrefix = prefix;
  std::shared_ptr<Algorithm> made = AlgorithmRegistry::global().create(algorithm, options);
  if (intra == nullptr) {
    BAGUA_ENFORCE(inter == nullptr, "an inter-node group needs an intra-node group");
    reducer_ =
        std::make_unique<Reducer>(group.comm(), group.ops(), made, std::move(specs), store, o);
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

PyReducer::~PyReducer() {
  if (PyGILState_Check()) {
    nanobind::gil_scoped_release release;
    reducer_.reset();
  }
}

}  // namespace bagua::python
