// bagua._C.LocalSGD and bagua._C.DiLoCo: the runtime's local SGD
// (runtime/algorithms/local_sgd.h) and DiLoCo (runtime/algorithms/diloco.h)
// over a ProcessGroup, with the training's CUDA stream passed as an integer
// to each call. Both own no thread; they are built in place (not movable).
#include "python/src/local_updates_binding.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "python/src/process_group.h"
#include "runtime/algorithms/diloco.h"
#include "runtime/algorithms/local_sgd.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace bagua::python {
namespace {

void constructLocalSgd(LocalSgd* self, ProcessGroup& group, const TensorTuples& tensors,
                       int64_t syncEvery, double timeoutS) {
  LocalSgd::Options o;
  o.syncEvery = syncEvery;
  o.timeout = timeoutFromSeconds(timeoutS);
  const Device device = group.comm()->device();
  new (self)
      LocalSgd(group.comm(), group.ops(), tensorSpecs(tensors, device), stepOpsFor(device), o);
}

void constructDiLoCo(DiLoCo* self, ProcessGroup& group, const TensorTuples& tensors,
                     const OptionMap& options, size_t bucketBytes, double timeoutS) {
  DiLoCo::Options o = diLoCoOptions(AlgorithmRegistry::global().resolve("diloco", options));
  o.bucketBytes = bucketBytes;
  o.timeout = timeoutFromSeconds(timeoutS);
  const Device device = group.comm()->device();
  new (self) DiLoCo(group.comm(), group.ops(), tensorSpecs(tensors, device), stepOpsFor(device), o);
}

nb::list stateBuffers(const DiLoCo& d) {
  nb::list out;
  for (const DiLoCo::StateBuffer& b : d.stateBuffers()) {
    out.append(nb::make_tuple(b.name, dtypeName(b.dtype), b.numel));
  }
  return out;
}

}  // namespace

void bindLocalUpdates(nb::module_& m) {
  const auto release = nb::call_guard<nb::gil_scoped_release>();
  nb::class_<LocalSgd>(m, "LocalSGD")
      .def("__init__", &constructLocalSgd, "group"_a, "tensors"_a, "sync_every"_a,
           "timeout_s"_a = 300.0, release,
           "Averages `tensors` (name, data pointer, numel, dtype) exactly every sync_every "
           "local steps over `group`; every rank the same tensors.")
      .def("after_step", &LocalSgd::afterStep, "stream"_a = 0, release,
           "After the optimizer step: counts the local step; every sync_every-th, averages.")
      .def_prop_rw("steps", &LocalSgd::steps, &LocalSgd::setSteps)
      .def_prop_ro("syncs", &LocalSgd::syncs)
      .def_prop_ro("last_sync_step", &LocalSgd::lastSyncStep);

  nb::class_<DiLoCo>(m, "DiLoCo")
      .def("__init__", &constructDiLoCo, "group"_a, "tensors"_a, "options"_a,
           "bucket_bytes"_a = 10u << 20, "timeout_s"_a = 300.0, release,
           "DiLoCo over `tensors` (name, data pointer, numel, dtype) with the registry's "
           "'diloco' options; the start point is the tensors' current values.")
      .def("after_step", &DiLoCo::afterStep, "stream"_a = 0, release,
           "After the optimizer step: applies the updates due, sends the fragments scheduled.")
      .def("flush", &DiLoCo::flush, release, "Waits until no communication is in flight.")
      .def_prop_ro("steps", &DiLoCo::steps)
      .def_prop_ro("fragments", &DiLoCo::fragments)
      .def("last_send_step", &DiLoCo::lastSendStep, "fragment"_a)
      .def("last_apply_step", &DiLoCo::lastApplyStep, "fragment"_a)
      .def("state_buffers", &stateBuffers, "(name, dtype, numel) of every checkpointed buffer.")
      .def(
          "save_buffer",
          [](DiLoCo& d, const std::string& name, uintptr_t ptr, uintptr_t stream) {
            d.saveBuffer(name, reinterpret_cast<void*>(ptr), stream);
          },
          "name"_a, "ptr"_a, "stream"_a = 0, release)
      .def(
          "load_buffer",
          [](DiLoCo& d, const std::string& name, uintptr_t ptr, uintptr_t stream) {
            d.loadBuffer(name, reinterpret_cast<const void*>(ptr), stream);
          },
          "name"_a, "ptr"_a, "stream"_a = 0, release)
      .def("due_steps", &DiLoCo::dueSteps)
      .def("restore", &DiLoCo::restore, "steps"_a, "due"_a, release);
}

}  // namespace bagua::python
