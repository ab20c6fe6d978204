// bagua._C.AsyncModelAverage: the runtime's asynchronous model average
// (runtime/algorithms/async_model_average.h) over a ProcessGroup, with the
// training's CUDA stream passed as an integer to each call.
#include "python/src/async_binding.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "runtime/algorithms/async_model_average.h"
#include "runtime/common/error.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace bagua::python {
namespace {

// The averager as Python holds it: destroyed with the GIL released, since
// stopping waits for a round whose CPU operations may need the GIL
// (torch_communicator.h).
struct PyAsyncModelAverage {
  std::unique_ptr<AsyncModelAverage> impl;

  PyAsyncModelAverage(ProcessGroup& group, const TensorTuples& tensors, double intervalMs,
                      double timeoutS) {
    std::vector<TensorSpec> specs = tensorSpecs(tensors, group.comm()->device());
    AsyncModelAverage::Options o;
    BAGUA_ENFORCE(intervalMs > 0, "async: sync_interval_ms must be positive, got " +
                                      std::to_string(intervalMs));
    BAGUA_ENFORCE(timeoutS > 0,
                  "async: timeout must be positive, got " + std::to_string(timeoutS));
    o.interval = std::chrono::milliseconds(static_cast<long long>(intervalMs));
    o.timeout = std::chrono::milliseconds(static_cast<long long>(timeoutS * 1000));
    impl = std::make_unique<AsyncModelAverage>(group.comm(), group.ops(), std::move(specs),
                                               stepOpsFor(group), o);
  }
  ~PyAsyncModelAverage() {
    if (PyGILState_Check()) {
      nb::gil_scoped_release release;
      impl.reset();
    }
  }
};

}  // namespace

void bindAsync(nb::module_& m) {
  using A = PyAsyncModelAverage;
  nb::class_<A>(m, "AsyncModelAverage")
      .def(nb::init<ProcessGroup&, const TensorTuples&, double, double>(), "group"_a, "tensors"_a,
           "interval_ms"_a = 500.0, "timeout_s"_a = 300.0,
           nb::call_guard<nb::gil_scoped_release>(),
           "Averages `tensors` (name, data pointer, numel, dtype) every interval_ms in the "
           "background over `group` (its own communicator); every rank the same tensors.")
      .def("resume", [](A& a) { a.impl->resume(); }, nb::call_guard<nb::gil_scoped_release>(),
           "Starts the background rounds (nothing if they run).")
      .def("abort", [](A& a, uintptr_t stream) { a.impl->abort(stream); }, "stream"_a = 0,
           nb::call_guard<nb::gil_scoped_release>(),
           "Collective: stops the rounds on every rank, then averages synchronously.")
      .def("step_boundary", [](A& a, uintptr_t stream) { a.impl->stepBoundary(stream); },
           "stream"_a = 0, nb::call_guard<nb::gil_scoped_release>(),
           "At a step boundary: takes a requested snapshot or applies a finished average.")
      .def_prop_ro("averages", [](const A& a) { return a.impl->averages(); })
      .def_prop_ro("running", [](const A& a) { return a.impl->running(); });
}

}  // namespace bagua::python
