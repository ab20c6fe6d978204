// ProcessGroup: construction from Python arguments.
#include "python/src/process_group.h"

#include "runtime/common/error.h"

#if BAGUA_PYTHON_HAVE_GLOO
#include "runtime/comm/gloo_communicator.h"
#include "runtime/ops/cpu_ops.h"
#endif

#if BAGUA_PYTHON_HAVE_NCCL
#include "runtime/comm/nccl_communicator.h"
#include "runtime/ops/cuda_ops.h"
#include "runtime/ops/cuda_step_ops.h"
#endif

namespace bagua::python {

bool hasNccl() { return BAGUA_PYTHON_HAVE_NCCL != 0; }
bool hasGloo() { return BAGUA_PYTHON_HAVE_GLOO != 0; }

void shutdownNccl() {
#if BAGUA_PYTHON_HAVE_NCCL
  NcclCommunicator::shutdownAll();
#endif
}

std::shared_ptr<ProcessGroup> ProcessGroup::fromParts(std::shared_ptr<Communicator> comm,
                                                      std::shared_ptr<DeviceOps> ops,
                                                      std::chrono::milliseconds timeout) {
  auto group = std::make_shared<ProcessGroup>();
  group->setComm(std::move(comm));
  group->ops_ = std::move(ops);
  group->timeout_ = timeout;
  return group;
}

std::chrono::milliseconds timeoutFromSeconds(double seconds) {
  BAGUA_ENFORCE(seconds > 0, "timeout must be positive, got " + std::to_string(seconds));
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

StepOpsFactory stepOpsFor(const ProcessGroup& group) {
#if BAGUA_PYTHON_HAVE_NCCL
  if (auto* nccl = dynamic_cast<NcclCommunicator*>(group.raw().get())) {
    const int device = nccl->cudaDevice();
    return [device](uintptr_t stream) {
      return cudaStepOps(reinterpret_cast<cudaStream_t>(stream), device);
    };
  }
#endif
  (void)group;
  return [](uintptr_t) { return cpuStepOps(); };
}

std::vector<TensorSpec> tensorSpecs(const TensorTuples& tensors, Device device) {
  std::vector<TensorSpec> specs;
  for (const auto& [name, ptr, numel, dtype] : tensors) {
    specs.push_back(
        TensorSpec{name, reinterpret_cast<void*>(ptr), numel, parseDType(dtype), device});
  }
  return specs;
}

void ProcessGroup::setComm(std::shared_ptr<Communicator> raw) {
  raw_ = std::move(raw);
  comm_ = std::make_shared<CountingCommunicator>(raw_);
}

std::shared_ptr<ProcessGroup> ProcessGroup::gloo(Store& store, int rank, int size,
                                                 const std::string& prefix,
                                                 const std::string& iface, double timeoutS) {
#if BAGUA_PYTHON_HAVE_GLOO
  GlooCommunicator::Options o;
  o.prefix = prefix;
  o.iface = iface;
  o.timeout = timeoutFromSeconds(timeoutS);
  auto group = std::make_shared<ProcessGroup>();
  auto comm = std::make_shared<GlooCommunicator>(store, rank, size, o);
  group->ops_ = std::make_shared<CpuOps>(*comm);
  group->setComm(comm);
  group->timeout_ = o.timeout;
  return group;
#else
  (void)store, (void)rank, (void)size, (void)prefix, (void)iface, (void)timeoutS;
  BAGUA_THROW(NotAvailable,
              "this build of bagua has no libgloo: CPU groups run on torch's Gloo "
              "(bagua.torch_api makes them; ProcessGroup.torch_gloo)");
#endif
}

std::shared_ptr<ProcessGroup> ProcessGroup::nccl(Store& store, int rank, int size, int device,
                                                 const std::string& prefix, double timeoutS,
                                                 bool background) {
#if BAGUA_PYTHON_HAVE_NCCL
  NcclCommunicator::Options o;
  o.prefix = prefix;
  o.timeout = timeoutFromSeconds(timeoutS);
  o.background = background;
  auto group = std::make_shared<ProcessGroup>();
  auto comm = std::make_shared<NcclCommunicator>(store, rank, size, device, o);
  group->ops_ = std::make_shared<CudaOps>(*comm);
  group->setComm(comm);
  group->timeout_ = o.timeout;
  return group;
#else
  (void)store, (void)rank, (void)size, (void)device, (void)prefix, (void)timeoutS,
      (void)background;
  BAGUA_THROW(InvalidArgument,
              "this build of bagua has no NCCL support (CUDA tensors); it was "
              "built without CUDA/NCCL");
#endif
}

}  // namespace bagua::python
