// bagua._C.LocalSGD and bagua._C.DiLoCo: the runtime's local SGD
// (runtime/algorithms/local_sgd.h) and DiLoCo (runtime/algorithms/diloco.h)
// over a ProcessGroup, with the training's CUDA stream passed as an integer
// to each call. Both own no thread; Python holds them through Held<>, which
// destroys them with the GIL released.
#include "python/src/local_updates_binding.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "python/src/process_group.h"
#include "runtime/algorithms/diloco.h"
#include "runtime/algorithms/local_sgd.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace bagua::python {
namespace {

// The runtime object as Python holds it: destroyed with the GIL released,
// since its destructor waits for communication in flight, which a CPU group
// over torch's Gloo needs the GIL to finish (torch_communicator.h).
template <typename T>
struct Held {
  std::unique_ptr<T> impl;
  T& operator*() { return *impl; }
  ~Held() {
    if (PyGILState_Check()) {
      nb::gil_scoped_release release;
      impl.reset();
    }
  }
};
using PyLocalSgd = Held<LocalSgd>;
using PyDiLoCo = Held<DiLoCo>;

void constructLocalSgd(PyLocalSgd* self, ProcessGroup& group, const TensorTuples& tensors,
                       int64_t syncEvery, double timeoutS) {
  LocalSgd::Options o;
  o.syncEvery = syncEvery;
  o.timeout = timeoutFromSeconds(timeoutS);
  const Device device = group.comm()->device();
  new (self) PyLocalSgd{std::make_unique<LocalSgd>(group.comm(), group.ops(),
                                                   tensorSpecs(tensors, device),
                                                   stepOpsFor(group), o)};
}

void constructDiLoCo(PyDiLoCo* self, ProcessGroup& group, const TensorTuples& tensors,
                     const OptionMap& options, size_t bucketBytes, double timeoutS) {
  DiLoCo::Options o = diLoCoOptions(AlgorithmRegistry::global().resolve("diloco", options));
  o.bucketBytes = bucketBytes;
  o.timeout = timeoutFromSeconds(timeoutS);
  const Device device = group.comm()->device();
  new (self) PyDiLoCo{std::make_unique<DiLoCo>(group.comm(), group.ops(),
                                               tensorSpecs(tensors, device), stepOpsFor(group),
                                               o)};
}

nb::list stateBuffers(PyDiLoCo& d) {
  nb::list out;
  for (const DiLoCo::StateBuffer& b : (*d).stateBuffers()) {
    out.append(nb::make_tuple(b.name, dtypeName(b.dtype), b.numel));
  }
  return out;
}

}  // namespace

void bindLocalUpdates(nb::module_& m) {
  const auto release = nb::call_guard<nb::gil_scoped_release>();
  nb::class_<PyLocalSgd>(m, "LocalSGD")
      .def("__init__", &constructLocalSgd, "group"_a, "tensors"_a, "sync_every"_a,
           "timeout_s"_a = 300.0, release,
           "Averages `tensors` (name, data pointer, numel, dtype) exactly every sync_every "
           "local steps over `group`; every rank the same tensors.")
      .def("after_step", [](PyLocalSgd& l, uintptr_t stream) { (*l).afterStep(stream); },
           "stream"_a = 0, release,
           "After the optimizer step: counts the local step; every sync_every-th, averages.")
      .def_prop_rw(
          "steps", [](PyLocalSgd& l) { return (*l).steps(); },
          [](PyLocalSgd& l, int64_t steps) { (*l).setSteps(steps); })
      .def("change_sync_every", [](PyLocalSgd& l, int64_t every) { (*l).changeSyncEvery(every); },
           "every"_a, "From now on, an average every `every` local steps counted from this one.")
      .def(
          "restore_schedule",
          [](PyLocalSgd& l, int64_t every, int64_t base) { (*l).restoreSchedule(every, base); },
          "every"_a, "base"_a, "A checkpoint's sync_every and the step its schedule counts from.")
      .def_prop_ro("sync_every", [](PyLocalSgd& l) { return (*l).syncEvery(); })
      .def_prop_ro("schedule_base", [](PyLocalSgd& l) { return (*l).scheduleBase(); })
      .def_prop_ro("syncs", [](PyLocalSgd& l) { return (*l).syncs(); })
      .def_prop_ro("last_sync_step", [](PyLocalSgd& l) { return (*l).lastSyncStep(); });

  nb::class_<PyDiLoCo>(m, "DiLoCo")
      .def("__init__", &constructDiLoCo, "group"_a, "tensors"_a, "options"_a,
           "bucket_bytes"_a = 10u << 20, "timeout_s"_a = 300.0, release,
           "DiLoCo over `tensors` (name, data pointer, numel, dtype) with the registry's "
           "'diloco' options; the start point is the tensors' current values.")
      .def("after_step", [](PyDiLoCo& d, uintptr_t stream) { (*d).afterStep(stream); },
           "stream"_a = 0, release,
           "After the optimizer step: applies the updates due, sends the fragments scheduled.")
      .def("flush", [](PyDiLoCo& d) { (*d).flush(); }, release,
           "Waits until no communication is in flight.")
      .def(
          "change_sync_every",
          [](PyDiLoCo& d, int64_t every, uintptr_t stream) { (*d).changeSyncEvery(every, stream); },
          "every"_a, "stream"_a = 0, release,
          "Applies every update in flight now, then restarts the schedule here with H = every.")
      .def_prop_ro("sync_every", [](PyDiLoCo& d) { return (*d).syncEvery(); })
      .def_prop_ro("schedule_base", [](PyDiLoCo& d) { return (*d).scheduleBase(); })
      .def_prop_ro("overlap_steps", [](PyDiLoCo& d) { return (*d).overlapSteps(); })
      .def_prop_ro("steps", [](PyDiLoCo& d) { return (*d).steps(); })
      .def_prop_ro("fragments", [](PyDiLoCo& d) { return (*d).fragments(); })
      .def("last_send_step", [](PyDiLoCo& d, size_t f) { return (*d).lastSendStep(f); },
           "fragment"_a)
      .def("last_apply_step", [](PyDiLoCo& d, size_t f) { return (*d).lastApplyStep(f); },
           "fragment"_a)
      .def("state_buffers", &stateBuffers, "(name, dtype, numel) of every checkpointed buffer.")
      .def(
          "save_buffer",
          [](PyDiLoCo& d, const std::string& name, uintptr_t ptr, uintptr_t stream) {
            (*d).saveBuffer(name, reinterpret_cast<void*>(ptr), stream);
          },
          "name"_a, "ptr"_a, "stream"_a = 0, release)
      .def(
          "load_buffer",
          [](PyDiLoCo& d, const std::string& name, uintptr_t ptr, uintptr_t stream) {
            (*d).loadBuffer(name, reinterpret_cast<const void*>(ptr), stream);
          },
          "name"_a, "ptr"_a, "stream"_a = 0, release)
      .def("due_steps", [](PyDiLoCo& d) { return (*d).dueSteps(); })
      .def(
          "restore",
          [](PyDiLoCo& d, int64_t steps, const std::vector<int64_t>& due, int64_t every,
             int64_t base) { (*d).restore(steps, due, every, base); },
          "steps"_a, "due"_a, "sync_every"_a = 0, "schedule_base"_a = 0, release);
}

}  // namespace bagua::python
