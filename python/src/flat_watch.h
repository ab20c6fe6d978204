// bagua._C.FlatWatch: the fused optimizer's per-step check of one flat group
// (python/bagua/torch_api/contrib/fuse/layout.py) in one C pass over the
// parameters' Python objects, kept from one step to the next.
//
// It sorts each parameter i into: missing (p.grad is None), odd (p.grad is
// another tensor than the group's gradient view), moved (p's data is no
// longer its region of the parameter buffer). A gradient view is known by
// identity (the view objects are held: exact checks) or by its data pointer
// (nothing held, so that a dropped view lowers the buffer's use count).
//
// Two ways to look, with the same answer:
// - through torch's accessors: the `grad` getter of torch._C.TensorBase
//   (called directly, no attribute lookup) and `data_ptr`; about 100-300 ns
//   a parameter (cache misses in torch's objects and its Python wrappers);
// - by reading five fields of torch's objects (exact checks only): the
//   TensorImpl of the Python tensor, its StorageImpl, storage offset and
//   AutogradMeta, and that meta's grad. Parameters whose fields do not say
//   "untouched" are then looked at through the accessors. About 10-20 ns a
//   parameter. The fields' offsets are not compiled in (no libtorch link):
//   find_tensor_layout finds them once per process on probe tensors whose
//   values are known (pointer equality on several tensors, so a wrong
//   offset cannot pass), and each FlatWatch checks on its own parameters
//   that both ways agree before it reads fields; otherwise it uses the
//   accessors only. Every read is inside an object the watch keeps alive
//   (the parameter, its current TensorImpl, that impl's AutogradMeta).
#pragma once

#include <nanobind/nanobind.h>

namespace bagua::python {

void bindFlatWatch(nanobind::module_& m);

}  // namespace bagua::python
