// bagua._C.OptimList (optim_binding.h).
//
// OptimList(device, tensors, param_dtype, state_dtype, chunk_elems,
// lamb_batch_elems, pack_elems, lamb_lookahead, lamb_blocks_per_sm)
// (optim::LambLayout for the lamb_ ones): `tensors` is a list of (numel, param, grad, state0,
// state1, state2, master) with addresses as integers (0: slot unused);
// device "cpu" or a CUDA device index >= 0. A CUDA list is uploaded once
// (kernels/optim/optim_cuda.h); each step passes its scalars, the AMP
// tensors' addresses (found_inf, grad_scale; 0: none) and the caller's CUDA
// stream as an integer (torch.cuda.current_stream().cuda_stream). A CPU list
// runs the reference (kernels/optim/optim_cpu.h) with the GIL released.
#include "python/src/optim_binding.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/optim/optim_cpu.h"
#include "runtime/comm/types.h"
#include "runtime/common/error.h"

#if BAGUA_PYTHON_HAVE_NCCL
#include "kernels/optim/optim_cuda.h"
#include "runtime/cuda/device_scope.h"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace bagua::python {
namespace {

namespace optim = bagua::kernels::optim;
using Entry = std::tuple<size_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t>;

const float* floatAt(uintptr_t p) { return reinterpret_cast<const float*>(p); }

class OptimList {
 public:
  OptimList(int device, const std::vector<Entry>& tensors, const std::string& paramDtype,
            const std::string& stateDtype, size_t chunkElems, size_t lambBatchElems, int packElems,
            uint32_t lambLookahead, uint32_t lambBlocksPerSm)
      : device_(device) {
    types_.param = parseDType(paramDtype);
    types_.state = parseDType(stateDtype);
    for (const auto& [numel, p, g, s0, s1, s2, m] : tensors) {
      optim::TensorRef r;
      r.numel = numel;
      const uintptr_t slots[optim::kSlots] = {p, g, s0, s1, s2, m};
      for (int s = 0; s < optim::kSlots; ++s) r.ptr[s] = reinterpret_cast<void*>(slots[s]);
      refs_.push_back(r);
    }
    optim::checkList("OptimList", refs_, types_);
    if (device_ < 0) return;
#if BAGUA_PYTHON_HAVE_NCCL
    DeviceScope scope(device_);
    const optim::LambLayout lamb{lambBatchElems, lambLookahead, lambBlocksPerSm};
    list_ = std::make_unique<optim::DeviceTensorList>(refs_, types_, chunkElems, lamb, packElems);
#else
    (void)chunkElems;
    (void)lambBatchElems;
    (void)packElems;
    (void)lambLookahead;
    (void)lambBlocksPerSm;
    BAGUA_THROW(NotAvailable, "bagua._C.OptimList: this build has no CUDA kernels (device " +
                                  std::to_string(device_) + ")");
#endif
  }

  size_t size() const { return refs_.size(); }

  void sgd(double lr, double momentum, double dampening, double weightDecay, bool nesterov,
           bool maximize, bool firstStep, uintptr_t foundInf, uintptr_t gradScale,
           [[maybe_unused]] uintptr_t stream) {
    const optim::SgdArgs a{lr, momentum, dampening, weightDecay, nesterov, maximize, firstStep};
    const optim::AmpArgs amp{floatAt(foundInf), floatAt(gradScale)};
    if (device_ < 0) return optim::sgdStepCpu(refs_, types_, a, amp);
#if BAGUA_PYTHON_HAVE_NCCL
    onGpu(stream, [&](cudaStream_t s) { return optim::sgdStep(*list_, a, amp, s); });
#endif
  }

  void adam(double lr, double beta1, double beta2, double eps, double weightDecay, double step,
            bool decoupled, bool amsgrad, bool maximize, uintptr_t foundInf, uintptr_t gradScale,
            [[maybe_unused]] uintptr_t stream) {
    const optim::AdamArgs a{lr, beta1, beta2, eps, weightDecay, step, decoupled, amsgrad, maximize};
    const optim::AmpArgs amp{floatAt(foundInf), floatAt(gradScale)};
    if (device_ < 0) return optim::adamStepCpu(refs_, types_, a, amp);
#if BAGUA_PYTHON_HAVE_NCCL
    onGpu(stream, [&](cudaStream_t s) { return optim::adamStep(*list_, a, amp, s); });
#endif
  }

  void adagrad(double lr, double lrDecay, double weightDecay, double eps, double step,
               bool maximize, uintptr_t foundInf, uintptr_t gradScale,
               [[maybe_unused]] uintptr_t stream) {
    const optim::AdagradArgs a{lr, lrDecay, weightDecay, eps, step, maximize};
    const optim::AmpArgs amp{floatAt(foundInf), floatAt(gradScale)};
    if (device_ < 0) return optim::adagradStepCpu(refs_, types_, a, amp);
#if BAGUA_PYTHON_HAVE_NCCL
    onGpu(stream, [&](cudaStream_t s) { return optim::adagradStep(*list_, a, amp, s); });
#endif
  }

  void lamb(double lr, double beta1, double beta2, double eps, double weightDecay, double step,
            double maxTrust, bool biasCorrection, uintptr_t foundInf, uintptr_t gradScale,
            [[maybe_unused]] uintptr_t stream) {
    const optim::LambArgs a{lr, beta1, beta2, eps, weightDecay, step, maxTrust, biasCorrection};
    const optim::AmpArgs amp{floatAt(foundInf), floatAt(gradScale)};
    if (device_ < 0) return optim::lambStepCpu(refs_, types_, a, amp);
#if BAGUA_PYTHON_HAVE_NCCL
    onGpu(stream, [&](cudaStream_t s) { return optim::lambStep(*list_, a, amp, s); });
#endif
  }

 private:
#if BAGUA_PYTHON_HAVE_NCCL
  // Runs launch(stream) with the list's device current; a failed launch throws.
  template <typename Launch>
  void onGpu(uintptr_t stream, Launch&& launch) {
    DeviceScope scope(device_);
    const cudaError_t err = launch(reinterpret_cast<cudaStream_t>(stream));
    if (err != cudaSuccess) {
      BAGUA_THROW(CudaError,
                  std::string("fused optimizer launch failed: ") + cudaGetErrorString(err));
    }
  }
  std::unique_ptr<optim::DeviceTensorList> list_;
#endif

  int device_;
  optim::ListTypes types_;
  std::vector<optim::TensorRef> refs_;
};

}  // namespace

void bindOptim(nb::module_& m) {
  const auto release = nb::call_guard<nb::gil_scoped_release>();
  const uintptr_t none = 0;
  nb::class_<OptimList>(m, "OptimList")
      .def(nb::init<int, const std::vector<Entry>&, const std::string&, const std::string&, size_t,
                    size_t, int, uint32_t, uint32_t>(),
           "device"_a, "tensors"_a, "param_dtype"_a, "state_dtype"_a, "chunk_elems"_a = 8192,
           "lamb_batch_elems"_a = size_t{0}, "pack_elems"_a = 0, "lamb_lookahead"_a = 0u,
           "lamb_blocks_per_sm"_a = 0u,
           "A tensor list for the fused optimizers: device -1 (CPU) or a CUDA index; tensors "
           "(numel, param, grad, state0, state1, state2, master) as addresses (0: unused).")
      .def("__len__", &OptimList::size)
      .def("sgd", &OptimList::sgd, "lr"_a, "momentum"_a, "dampening"_a, "weight_decay"_a,
           "nesterov"_a, "maximize"_a, "first_step"_a, "found_inf"_a = none, "grad_scale"_a = none,
           "stream"_a = none, release, "torch.optim.SGD's step.")
      .def("adam", &OptimList::adam, "lr"_a, "beta1"_a, "beta2"_a, "eps"_a, "weight_decay"_a,
           "step"_a, "decoupled"_a, "amsgrad"_a, "maximize"_a, "found_inf"_a = none,
           "grad_scale"_a = none, "stream"_a = none, release,
           "torch.optim.Adam's (decoupled: AdamW's) step; step counts this one.")
      .def("adagrad", &OptimList::adagrad, "lr"_a, "lr_decay"_a, "weight_decay"_a, "eps"_a,
           "step"_a, "maximize"_a, "found_inf"_a = none, "grad_scale"_a = none, "stream"_a = none,
           release, "torch.optim.Adagrad's step; step counts this one.")
      .def("lamb", &OptimList::lamb, "lr"_a, "beta1"_a, "beta2"_a, "eps"_a, "weight_decay"_a,
           "step"_a, "max_trust"_a, "bias_correction"_a, "found_inf"_a = none,
           "grad_scale"_a = none, "stream"_a = none, release,
           "LAMB's step, each tensor with its own trust ratio.");
}

}  // namespace bagua::python
