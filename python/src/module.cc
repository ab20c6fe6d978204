// bagua._C: the Python binding of libbagua. Tensors cross as (data pointer,
// element count, dtype name) so one build serves any torch version (no
// libtorch link); CUDA streams cross as integers (torch's cuda_stream).
//
//   ProcessGroup.gloo(store, rank, size, ...) / .torch_gloo(backend, rank, size)
//     / ProcessGroup.nccl(..., device)
//     and its collectives: allreduce, reduce, broadcast, allgather, gather,
//     scatter, reduce_scatter, alltoall, alltoall_v, send, recv, barrier
//   Reducer(group, store, algorithm, tensors, bucket_bytes, timeout_s, prefix, options)
//   AsyncModelAverage, LocalSGD, DiLoCo: the algorithms the engine drives itself
//   algorithm_registry(), check_algorithm_options(name, options): the registry
//   build_info(), nccl_library(): what this build has, which NCCL it bound
//   OptimList(device, tensors, ...), FlatWatch(params, ...): the fused optimizers
//   MemoryCache, SharedCounters, RedisShards, GuardedProcess: the cached dataset's stores
//
// Errors: InvalidArgument -> ValueError, TimeoutError -> TimeoutError,
// NotAvailable -> NotImplementedError, other bagua errors -> RuntimeError;
// every message names the problem.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "python/src/async_binding.h"
#include "python/src/build_info.h"
#include "python/src/callback_store.h"
#include "python/src/compressed_allreduce.h"
#include "python/src/data_binding.h"
#include "python/src/flat_watch.h"
#include "python/src/local_updates_binding.h"
#include "python/src/optim_binding.h"
#include "python/src/process_group.h"
#include "python/src/reducer_binding.h"
#include "python/src/registry_binding.h"
#include "python/src/torch_communicator.h"
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
  bagua::python::bindData(m);  // after the translator above: its own are tried first
  m.def("has_nccl", &bagua::python::hasNccl,
        "Whether this build has the CUDA path (kernels, and NCCL bound at run time).");
  m.def("shutdown_nccl", &bagua::python::shutdownNccl, nb::call_guard<nb::gil_scoped_release>(),
        "Destroys every NCCL communicator of this process, newest first: the order all "
        "ranks share (called at exit; later operations on them fail).");
  m.def("has_gloo", &bagua::python::hasGloo,
        "Whether CPU groups can use libgloo (else they run on torch's Gloo).");
  bagua::python::bindBuildInfo(m);

  // Collectives: dtype "float32", "float16", "bfloat16", "float64", "int8",
  // "uint8", "int32", "int64"; op "sum", "product", "min", "max", "band",
  // "bor", "bxor", "avg" ("mean"). A CPU group blocks until the operation is
  // done; a CUDA group orders it on `stream` (an integer cudaStream_t, 0:
  // the legacy default stream) and returns at once.
  using PG = bagua::python::ProcessGroup;
  const auto release = nb::call_guard<nb::gil_scoped_release>();
  nb::class_<bagua::python::ProcessGroup>(m, "ProcessGroup")
      .def_static("gloo", &bagua::python::ProcessGroup::gloo, "store"_a, "rank"_a, "size"_a,
                  "prefix"_a = "bagua/gloo", "iface"_a = "", "timeout_s"_a = 300.0,
                  nb::keep_alive<0, 1>(), "A CPU process group over Gloo.")
      .def_static("torch_gloo", &bagua::python::torchGlooGroup, "backend"_a, "rank"_a, "size"_a,
                  "timeout_s"_a = 300.0,
                  "A CPU process group over torch's Gloo (backend: "
                  "bagua.torch_api._torch_gloo.TorchGlooBackend).")
      .def_static("nccl", &bagua::python::ProcessGroup::nccl, "store"_a, "rank"_a, "size"_a,
                  "device"_a, "prefix"_a = "bagua/nccl", "timeout_s"_a = 300.0,
                  "background"_a = false, nb::keep_alive<0, 1>(),
                  "A CUDA process group over NCCL (background: few SMs for exchanges that run "
                  "beside training; runtime/comm/nccl_communicator.h).")
      .def_prop_ro("rank", &bagua::python::ProcessGroup::rank)
      .def_prop_ro("size", &bagua::python::ProcessGroup::size)
      .def_prop_ro("device", &bagua::python::ProcessGroup::deviceName)
      .def("allreduce", &PG::allreduce, "ptr"_a, "count"_a, "dtype"_a, "op"_a = "sum",
           "stream"_a = 0, release,
           "Reduces count elements of dtype in place across ranks with op.")
      .def("reduce", &PG::reduce, "in_ptr"_a, "out_ptr"_a, "count"_a, "dtype"_a, "op"_a, "root"_a,
           "stream"_a = 0, release,
           "Reduces count elements of dtype into root's out_ptr (may equal in_ptr; other "
           "ranks' buffers are not written, out_ptr may be 0 there).")
      .def("broadcast", &PG::broadcast, "ptr"_a, "nbytes"_a, "root"_a, "stream"_a = 0, release,
           "Copies nbytes at root's ptr to every rank's ptr.")
      .def("allgather", &PG::allgather, "in_ptr"_a, "out_ptr"_a, "bytes_per_rank"_a, "stream"_a = 0,
           release, "out_ptr receives size blocks, block r from rank r.")
      .def("gather", &PG::gather, "in_ptr"_a, "out_ptr"_a, "bytes_per_rank"_a, "root"_a,
           "stream"_a = 0, release,
           "Root's out_ptr receives size blocks, block r from rank r (out_ptr may be 0 "
           "elsewhere).")
      .def("scatter", &PG::scatter, "in_ptr"_a, "out_ptr"_a, "bytes_per_rank"_a, "root"_a,
           "stream"_a = 0, release,
           "Block r of root's in_ptr lands in rank r's out_ptr (in_ptr may be 0 elsewhere).")
      .def("reduce_scatter", &PG::reduceScatter, "in_ptr"_a, "out_ptr"_a, "count_per_rank"_a,
           "dtype"_a, "op"_a, "stream"_a = 0, release,
           "in_ptr holds size chunks of count_per_rank elements; chunk r of the reduction "
           "lands in rank r's out_ptr.")
      .def("alltoall", &PG::alltoall, "in_ptr"_a, "out_ptr"_a, "bytes_per_rank"_a, "stream"_a = 0,
           release, "Block j of in_ptr goes to rank j; block j of out_ptr comes from rank j.")
      .def("alltoall_v", &PG::alltoallV, "in_ptr"_a, "send_bytes"_a, "send_offsets"_a, "out_ptr"_a,
           "recv_bytes"_a, "recv_offsets"_a, "stream"_a = 0, release,
           "send_bytes[j] bytes at in_ptr + send_offsets[j] go to rank j; recv_bytes[j] bytes "
           "from rank j land at out_ptr + recv_offsets[j] (one entry per rank).")
      .def("send", &PG::send, "ptr"_a, "nbytes"_a, "peer"_a, "stream"_a = 0, release,
           "Sends nbytes at ptr to rank peer (matched in order with its recv).")
      .def("recv", &PG::recv, "ptr"_a, "nbytes"_a, "peer"_a, "stream"_a = 0, release,
           "Receives nbytes from rank peer into ptr.")
      .def("barrier", &PG::barrier, release, "Blocks until every rank entered the barrier.")
      .def("wait_stream", &PG::waitStream, "stream"_a,
           "CUDA: later operations of the group wait for work already on `stream`.")
      .def_prop_ro("bytes_sent", &PG::bytesSent,
                   "Bytes this rank sent through the group (the standard algorithms' per-rank "
                   "bytes of each collective; runtime/comm/counting_communicator.h).");

  nb::class_<bagua::python::MinMaxUInt8Allreduce>(m, "MinMaxUInt8Allreduce")
      .def(nb::init<std::shared_ptr<bagua::python::ProcessGroup>, size_t, const std::string&,
                    bool>(),
           "group"_a, "count"_a, "dtype"_a, "average"_a = true,
           "Averages (average=False: sums) `count` elements (a multiple of the group's size) "
           "in 8 bits, Bagua's MinMaxUInt8 the way ByteGrad does (alltoall, reduce, "
           "allgather); its scratch lives as long as this object.")
      .def("run", &bagua::python::MinMaxUInt8Allreduce::run, "ptr"_a, "stream"_a = 0, release,
           "The count elements at ptr, in place, ordered as the group's collectives.")
      .def_prop_ro("count", &bagua::python::MinMaxUInt8Allreduce::count);

  nb::class_<bagua::DeviceBuffer>(m, "ElementState",
                                  "An algorithm's per-element state saved by "
                                  "Reducer.save_element_state (opaque; on the group's device).")
      .def_prop_ro("bytes", &bagua::DeviceBuffer::bytes)
      .def_prop_ro(
          "data_ptr",
          [](bagua::DeviceBuffer& state) { return reinterpret_cast<uintptr_t>(state.data()); },
          "Its address on the group's device (tests, debugging: e.g. torch.as_tensor of a "
          "__cuda_array_interface__ over it).");

  nb::class_<bagua::python::PyReducer>(m, "Reducer")
      .def(nb::init<bagua::python::ProcessGroup&, bagua::Store&, const std::string&,
                    const std::vector<std::tuple<std::string, uintptr_t, size_t, std::string>>&,
                    size_t, double, const std::string&, const bagua::OptionMap&,
                    bagua::python::ProcessGroup*, bagua::python::ProcessGroup*, int>(),
           "group"_a, "store"_a, "algorithm"_a, "tensors"_a, "bucket_bytes"_a = 10u << 20,
           "timeout_s"_a = 300.0, "prefix"_a = "bagua/reducer",
           "options"_a = bagua::OptionMap{}, "intra"_a = nb::none(), "inter"_a = nb::none(),
           "nodes"_a = 1, nb::keep_alive<1, 2>(), nb::keep_alive<1, 3>(), release,
           "Plans buckets over tensors (name, data pointer, numel, dtype) and drives the "
           "algorithm over them; every rank must register the same tensors. With `intra` "
           "(this node's ranks) the algorithm runs hierarchically: reduced in the node, run "
           "among the `nodes` leaders over `inter` (None on other ranks), broadcast back.")
      .def("mark_ready", &bagua::python::PyReducer::markReady, "index"_a, "ptr"_a)
      .def("mark_all_ready", &bagua::python::PyReducer::markAllReady)
      .def("wait", &bagua::python::PyReducer::wait, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("num_buckets", &bagua::python::PyReducer::numBuckets)
      .def("save_element_state", &bagua::python::PyReducer::saveElementState, release,
           "The algorithm's per-element state (ByteGrad's error-feedback residuals) packed "
           "per tensor, or None; between steps.")
      .def("load_element_state", &bagua::python::PyReducer::loadElementState, "state"_a,
           release,
           "Takes a state another Reducer over the same tensors saved (other buckets are fine).")
      .def(
          "element_state_bytes",
          [](bagua::python::PyReducer& reducer, bagua::DeviceBuffer& state) {
            BAGUA_ENFORCE(reducer.device() == bagua::Device::kCpu,
                          "element_state_bytes: a CPU reducer's state only (tests, debugging)");
            return nb::bytes(static_cast<const char*>(state.data()), state.bytes());
          },
          "state"_a, "A CPU reducer's saved state as bytes (tests and debugging).");

  bagua::python::bindAsync(m);
  bagua::python::bindLocalUpdates(m);
  bagua::python::bindOptim(m);
  bagua::python::bindFlatWatch(m);
}
