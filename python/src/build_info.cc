// build_info(): the features compiled in; nccl_library(): the NCCL the
// runtime binds to in this process (runtime/nccl/nccl_api.h), loading it.
#include "python/src/build_info.h"

#include <nanobind/stl/string.h>

#include "config.h"
#include "kernels/kernels_config.h"
#include "runtime/common/error.h"

#if BAGUA_PYTHON_HAVE_NCCL
#include <cuda_runtime_api.h>

#include "runtime/nccl/nccl_api.h"
#endif

namespace nb = nanobind;

namespace bagua::python {
namespace {

nb::dict buildInfo() {
  nb::dict info;
  info["version"] = BAGUA_VERSION;
  info["cuda"] = BAGUA_PYTHON_HAVE_NCCL != 0;
#if BAGUA_PYTHON_HAVE_NCCL
  info["cuda_runtime"] = std::to_string(CUDART_VERSION / 1000) + "." +
                         std::to_string(CUDART_VERSION % 1000 / 10) + " (static)";
  info["gpu_archs"] = BAGUA_KERNELS_GPU_ARCHS;
#else
  info["cuda_runtime"] = "";
  info["gpu_archs"] = "";
#endif
  info["cpu_collectives"] = BAGUA_PYTHON_HAVE_GLOO ? "libgloo" : "torch";
  info["plugin_engine"] = BAGUA_HAVE_LIBURING ? "io_uring (epoll fallback)" : "epoll only";
  return info;
}

nb::dict ncclLibraryInfo() {
#if BAGUA_PYTHON_HAVE_NCCL
  const NcclLibraryInfo& lib = ncclLibrary();
  nb::dict info;
  info["path"] = lib.path;
  info["version"] = lib.version;
  info["source"] = lib.source;
  return info;
#else
  BAGUA_THROW(NotAvailable, "this build of bagua has no CUDA path (no nvcc at build time)");
#endif
}

}  // namespace

void bindBuildInfo(nb::module_& m) {
  m.def("build_info", &buildInfo,
        "The features of this build: version, cuda, cuda_runtime, gpu_archs, "
        "cpu_collectives (libgloo or torch), plugin_engine.");
  m.def("nccl_library", &ncclLibraryInfo,
        "Binds the runtime to this process's NCCL (torch's, once torch is imported) and "
        "returns {path, version, source}; NotImplementedError naming what was tried if none.");
}

}  // namespace bagua::python
