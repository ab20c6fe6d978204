// bagua._C: the Python binding of libbagua. Tensors cross as (data pointer,
// element count, dtype name) so one build serves any torch version (no
// libtorch link); CUDA streams cross as integers (torch's cuda_stream).
//
//   ProcessGroup.gloo(store, rank, size, ...) / ProcessGroup.nccl(..., device)
//   Reducer(group, store, algorithm, tensors, bucket_bytes, timeout_s, prefix, options)
//   algorithm_registry(), check_algorithm_options(name, options): the registry
//
// Errors: InvalidArgument -> ValueError, TimeoutError -> TimeoutError,
// NotAvailable -> NotImplementedError, other bagua errors -> RuntimeError;
// every message names the problem.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "python/src/callback_store.h"
#include "python/src/process_group.h"
#include "python/src/registry_binding.h"
#include "runtime/common/error.h"

namespace nb = nanobind;
using namespace nb::literals;

NB_MODULE(_C, m) {
  m.doc() = "libbagua: Bagua's algorithms on NCCL (CUDA tensors) and Gloo (CPU tensors)";
  // Wrapped models (and with them process groups and reducers) commonly live
  // until the interpreter exits; nanobind would report those as leaks.
  nb::set_leak_warnings(false);

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const bagua::InvalidArgument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const bagua::TimeoutError& e) {
      PyErr_SetString(PyExc_TimeoutError, e.what());
    } catch (const bagua::NotAvailable& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const bagua::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  nb::class_<bagua::Store>(m, "Store");
  nb::class_<bagua::python::CallbackStore, bagua::Store>(m, "CallbackStore")
      .def(nb::init<nb::object>(), "store"_a,
           "Wraps a torch.distributed Store (set/get/add/wait).");

  bagua::python::bindRegistry(m);
  m.def("has_nccl", &bagua::python::hasNccl, "Whether this build has the NCCL (CUDA) path.");

  nb::class_<bagua::python::ProcessGroup>(m, "ProcessGroup")
      .def_static("gloo", &bagua::python::ProcessGroup::gloo, "store"_a, "rank"_a, "size"_a,
                  "prefix"_a = "bagua/gloo", "iface"_a = "", "timeout_s"_a = 300.0,
                  nb::keep_alive<0, 1>(), "A CPU process group over Gloo.")
      .def_static("nccl", &bagua::python::ProcessGroup::nccl, "store"_a, "rank"_a, "size"_a,
                  "device"_a, "prefix"_a = "bagua/nccl", "timeout_s"_a = 300.0,
                  nb::keep_alive<0, 1>(), "A CUDA process group over NCCL.")
      .def_prop_ro("rank", &bagua::python::ProcessGroup::rank)
      .def_prop_ro("size", &bagua::python::ProcessGroup::size)
      .def_prop_ro("device", &bagua::python::ProcessGroup::deviceName)
      .def("broadcast", &bagua::python::ProcessGroup::broadcast, "ptr"_a, "nbytes"_a, "root"_a,
           nb::call_guard<nb::gil_scoped_release>(), "Broadcasts nbytes at ptr from root; waits.")
      .def("allreduce", &bagua::python::ProcessGroup::allreduce, "ptr"_a, "count"_a, "dtype"_a,
           "op"_a = "sum", nb::call_guard<nb::gil_scoped_release>(),
           "Allreduces count elements of dtype in place (sum, avg, min, max); waits.")
      .def("barrier", &bagua::python::ProcessGroup::barrier,
           nb::call_guard<nb::gil_scoped_release>())
      .def("wait_stream", &bagua::python::ProcessGroup::waitStream, "stream"_a,
           "CUDA: later operations of the group wait for work already on `stream`.");

  nb::class_<bagua::python::PyReducer>(m, "Reducer")
      .def(nb::init<bagua::python::ProcessGroup&, bagua::Store&, const std::string&,
                    const std::vector<std::tuple<std::string, uintptr_t, size_t, std::string>>&,
                    size_t, double, const std::string&, const bagua::OptionMap&>(),
           "group"_a, "store"_a, "algorithm"_a, "tensors"_a, "bucket_bytes"_a = 10u << 20,
           "timeout_s"_a = 300.0, "prefix"_a = "bagua/reducer",
           "options"_a = bagua::OptionMap{}, nb::keep_alive<1, 2>(),
           nb::keep_alive<1, 3>(),
           "Plans buckets over tensors (name, data pointer, numel, dtype) and drives the "
           "algorithm over them; every rank must register the same tensors.")
      .def("mark_ready", &bagua::python::PyReducer::markReady, "index"_a, "ptr"_a)
      .def("mark_all_ready", &bagua::python::PyReducer::markAllReady)
      .def("wait", &bagua::python::PyReducer::wait, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("num_buckets", &bagua::python::PyReducer::numBuckets);
}
