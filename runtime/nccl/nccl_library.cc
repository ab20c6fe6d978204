// Binds nccl_api.h's functions to an NCCL library at run time. Where it
// looks, in order:
//   1. BAGUA_NCCL_LIBRARY, a path: the user's explicit choice;
//   2. a libnccl.so.2 already loaded in the process (torch's: `import torch`
//      loads pip's nvidia-nccl or the system NCCL it was built against), or
//      NCCL's symbols already visible in the process;
//   3. libnccl.so.2 through the dynamic loader's search path (C++ programs,
//      tests and tools that load nothing else).
// So in a PyTorch process the runtime uses exactly torch's NCCL; the Python
// layer checks that torch reports the same version (bagua/_nccl.py).
#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <mutex>

#include "runtime/common/error.h"
#include "runtime/nccl/nccl_api.h"

namespace bagua {
namespace {

// The oldest NCCL with every function below (ncclGetLastError: 2.13).
constexpr int kMinimumVersion = 21300;

struct NcclFunctions {
  decltype(&ncclGetVersion) getVersion;
  decltype(&ncclGetUniqueId) getUniqueId;
  decltype(&ncclCommInitRank) commInitRank;
  decltype(&ncclCommInitRankConfig) commInitRankConfig;  // null before NCCL 2.14
  decltype(&ncclCommDestroy) commDestroy;
  decltype(&ncclCommAbort) commAbort;
  decltype(&ncclGetErrorString) getErrorString;
  decltype(&ncclGetLastError) getLastError;
  decltype(&ncclCommGetAsyncError) commGetAsyncError;
  decltype(&ncclReduce) reduce;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclAllReduce) allReduce;
  decltype(&ncclReduceScatter) reduceScatter;
  decltype(&ncclAllGather) allGather;
  decltype(&ncclSend) send;
  decltype(&ncclRecv) recv;
  decltype(&ncclGroupStart) groupStart;
  decltype(&ncclGroupEnd) groupEnd;
};

struct Loaded {
  NcclFunctions fns{};
  NcclLibraryInfo info;
};

std::string pathOf(void* handle, void* symbol) {
  if (handle != RTLD_DEFAULT) {
    struct link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
        map->l_name[0] != '\0') {
      return map->l_name;
    }
  }
  Dl_info where{};
  if (dladdr(symbol, &where) != 0 && where.dli_fname != nullptr) return where.dli_fname;
  return "(unknown file)";
}

template <typename F>
void bind(void* handle, const char* name, F& slot, const std::string& from) {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    BAGUA_THROW(NotAvailable, std::string("the NCCL library ") + from + " has no " + name +
                                  ": bagua needs NCCL >= 2.13");
  }
  slot = reinterpret_cast<F>(symbol);
}

void bindAll(void* handle, NcclFunctions& f, const std::string& from) {
  bind(handle, "ncclGetVersion", f.getVersion, from);
  bind(handle, "ncclGetUniqueId", f.getUniqueId, from);
  bind(handle, "ncclCommInitRank", f.commInitRank, from);
  f.commInitRankConfig =
      reinterpret_cast<decltype(f.commInitRankConfig)>(dlsym(handle, "ncclCommInitRankConfig"));
  bind(handle, "ncclCommDestroy", f.commDestroy, from);
  bind(handle, "ncclCommAbort", f.commAbort, from);
  bind(handle, "ncclGetErrorString", f.getErrorString, from);
  bind(handle, "ncclGetLastError", f.getLastError, from);
  bind(handle, "ncclCommGetAsyncError", f.commGetAsyncError, from);
  bind(handle, "ncclReduce", f.reduce, from);
  bind(handle, "ncclBroadcast", f.broadcast, from);
  bind(handle, "ncclAllReduce", f.allReduce, from);
  bind(handle, "ncclReduceScatter", f.reduceScatter, from);
  bind(handle, "ncclAllGather", f.allGather, from);
  bind(handle, "ncclSend", f.send, from);
  bind(handle, "ncclRecv", f.recv, from);
  bind(handle, "ncclGroupStart", f.groupStart, from);
  bind(handle, "ncclGroupEnd", f.groupEnd, from);
}

// The handle to bind from and how it was found; empty `source` if none.
std::pair<void*, std::string> findLibrary(std::string& tried) {
  const char* explicitPath = std::getenv("BAGUA_NCCL_LIBRARY");
  if (explicitPath != nullptr && explicitPath[0] != '\0') {
    void* handle = dlopen(explicitPath, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      BAGUA_THROW(NotAvailable, std::string("BAGUA_NCCL_LIBRARY=") + explicitPath +
                                    " could not be loaded: " + dlerror());
    }
    return {handle, "BAGUA_NCCL_LIBRARY"};
  }
  if (void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD)) {
    return {handle, "already loaded"};
  }
  tried += "no libnccl.so.2 loaded in the process; ";
  if (dlsym(RTLD_DEFAULT, "ncclCommInitRank") != nullptr) {
    return {RTLD_DEFAULT, "already loaded (linked into the process)"};
  }
  if (void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL)) {
    return {handle, "loader search path"};
  }
  tried += std::string("libnccl.so.2 not on the loader's path (") + dlerror() + ")";
  return {nullptr, ""};
}

Loaded load() {
  std::string tried;
  auto [handle, source] = findLibrary(tried);
  if (handle == nullptr) {
    BAGUA_THROW(NotAvailable,
                "no NCCL library found (" + tried +
                    "); import torch (built with CUDA) first, or set BAGUA_NCCL_LIBRARY to the "
                    "path of libnccl.so.2");
  }
  Loaded loaded;
  void* probe = dlsym(handle, "ncclGetVersion");
  std::string path = pathOf(handle, probe);
  bindAll(handle, loaded.fns, path);
  int version = 0;
  if (loaded.fns.getVersion(&version) != ncclSuccess || version < kMinimumVersion) {
    BAGUA_THROW(NotAvailable, "the NCCL library " + path + " is version " +
                                  std::to_string(version) + "; bagua needs NCCL >= 2.13");
  }
  loaded.info = NcclLibraryInfo{path, version, source};
  return loaded;
}

const Loaded& loaded() {
  static std::once_flag once;
  static Loaded value;
  std::call_once(once, [] { value = load(); });  // a throw leaves `once` unset: retried
  return value;
}

const NcclFunctions& fns() { return loaded().fns; }

}  // namespace

const NcclLibraryInfo& ncclLibrary() { return loaded().info; }

ncclResult_t ncclGetVersion(int* version) { return fns().getVersion(version); }
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) { return fns().getUniqueId(uniqueId); }
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return fns().commInitRank(comm, nranks, commId, rank);
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  if (fns().commInitRankConfig == nullptr || ncclLibrary().version < kNcclConfigVersion) {
    return fns().commInitRank(comm, nranks, commId, rank);
  }
  return fns().commInitRankConfig(comm, nranks, commId, rank, config);
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) { return fns().commDestroy(comm); }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return fns().commAbort(comm); }
const char* ncclGetErrorString(ncclResult_t result) { return fns().getErrorString(result); }
const char* ncclGetLastError(ncclComm_t comm) { return fns().getLastError(comm); }
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return fns().commGetAsyncError(comm, asyncError);
}
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  return fns().reduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return fns().broadcast(sendbuff, recvbuff, count, datatype, root, comm, stream);
}
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return fns().allReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
}
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return fns().reduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
}
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return fns().allGather(sendbuff, recvbuff, sendcount, datatype, comm, stream);
}
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return fns().send(sendbuff, count, datatype, peer, comm, stream);
}
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return fns().recv(recvbuff, count, datatype, peer, comm, stream);
}
ncclResult_t ncclGroupStart() { return fns().groupStart(); }
ncclResult_t ncclGroupEnd() { return fns().groupEnd(); }

}  // namespace bagua
