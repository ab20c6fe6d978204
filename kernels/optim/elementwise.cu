// SGD, Adam/AdamW and Adagrad on the GPU (optim_cuda.h): one launch of the
// multi-tensor kernel per step, the element functions of optim_math.h.
#include "kernels/optim/multi_tensor.cuh"
#include "kernels/optim/optim_math.h"

namespace bagua::kernels::optim {
namespace {

// The element-wise optimizers: read everything, write the parameter and the state.
struct ElementwiseOp {
  static constexpr bool kReadsGrad = true;
  static constexpr bool kWritesParam = true;
  static constexpr bool kWritesState = true;
  static constexpr bool kL2Loads = false;
  __device__ void begin(const DeviceTable&, uint32_t) {}
  __device__ void end(const DeviceTable&, uint32_t) {}
};

struct SgdOp : ElementwiseOp {
  SgdScalars s;
  __device__ void operator()(float& p, float g, float (&st)[3]) { sgdElement(p, g, st[0], s); }
};

struct AdamOp : ElementwiseOp {
  AdamScalars s;
  __device__ void operator()(float& p, float g, float (&st)[3]) {
    adamElement(p, g, st[0], st[1], st[2], s);
  }
};

struct AdagradOp : ElementwiseOp {
  AdagradScalars s;
  __device__ void operator()(float& p, float g, float (&st)[3]) { adagradElement(p, g, st[0], s); }
};

template <typename Op>
cudaError_t launchAll(const DeviceTensorList& list, const Op& op, const AmpArgs& amp,
                      cudaStream_t stream) {
  const auto& im = list.impl();
  return dispatchList(im.types, [&](auto p, auto s) {
    return launchList<decltype(p), decltype(s)>(im, 0, static_cast<uint32_t>(im.blocks), false, op,
                                                amp, stream);
  });
}

}  // namespace

cudaError_t sgdStep(const DeviceTensorList& list, const SgdArgs& args, const AmpArgs& amp,
                    cudaStream_t stream) {
  checkSlots("sgd", list.slotMask(), sgdRule(args));
  SgdOp op;
  op.s = sgdScalars(args);
  return launchAll(list, op, amp, stream);
}

cudaError_t adamStep(const DeviceTensorList& list, const AdamArgs& args, const AmpArgs& amp,
                     cudaStream_t stream) {
  checkSlots("adam", list.slotMask(), adamRule(args));
  AdamOp op;
  op.s = adamScalars(args);
  return launchAll(list, op, amp, stream);
}

cudaError_t adagradStep(const DeviceTensorList& list, const AdagradArgs& args, const AmpArgs& amp,
                        cudaStream_t stream) {
  checkSlots("adagrad", list.slotMask(), adagradRule());
  AdagradOp op;
  op.s = adagradScalars(args);
  return launchAll(list, op, amp, stream);
}

}  // namespace bagua::kernels::optim
