// The part of NCCL's API the runtime uses, declared by us and bound at run
// time to the NCCL library the process already has (the one torch loaded).
//
// Why: a process must never hold two NCCLs (torch's and ours would each
// spawn proxy threads, and a communicator of one cannot talk to the other's
// version), and a build must not depend on where an NCCL happens to be
// installed: pip's nvidia-nccl, a system package or the CUDA toolkit. So
// nothing here links libnccl: the build needs only the CUDA runtime headers,
// and the first call resolves the functions (nccl_library.cc says where it
// looks, in order).
//
// The types and enum values are NCCL's public ABI (nccl.h, stable since
// 2.x); the functions are those of nccl.h with the same names and
// signatures, in namespace bagua, so runtime code reads like NCCL code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace bagua {

typedef struct ncclComm* ncclComm_t;

constexpr size_t kNcclUniqueIdBytes = 128;
typedef struct {
  char internal[kNcclUniqueIdBytes];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,  // NCCL >= 2.10
} ncclDataType_t;

// ncclConfig_t as NCCL 2.28 lays it out (nccl.h: ncclConfig_v22800). NCCL
// reads a config by its `version` field, so this layout is only handed to
// NCCL >= 2.28 (ncclCommInitRankConfig below says so); fields left at
// kNcclConfigUndefInt / nullptr keep NCCL's defaults (and its environment
// variables, which override a config).
constexpr int kNcclConfigUndefInt = -2147483647 - 1;  // NCCL_CONFIG_UNDEF_INT: INT_MIN
constexpr unsigned int kNcclConfigMagic = 0xcafebeef;
constexpr int kNcclConfigVersion = 22800;
typedef struct {
  size_t size = sizeof(*this);
  unsigned int magic = kNcclConfigMagic;
  unsigned int version = kNcclConfigVersion;
  int blocking = kNcclConfigUndefInt;
  int cgaClusterSize = kNcclConfigUndefInt;
  int minCTAs = kNcclConfigUndefInt;
  int maxCTAs = kNcclConfigUndefInt;
  const char* netName = nullptr;
  int splitShare = kNcclConfigUndefInt;
  int trafficClass = kNcclConfigUndefInt;
  const char* commName = nullptr;
  int collnetEnable = kNcclConfigUndefInt;
  int CTAPolicy = kNcclConfigUndefInt;
  int shrinkShare = kNcclConfigUndefInt;
  int nvlsCTAs = kNcclConfigUndefInt;
  int nChannelsPerNetPeer = kNcclConfigUndefInt;
  int nvlinkCentricSched = kNcclConfigUndefInt;
} ncclConfig_t;

// Where the functions came from (nccl_library.cc).
struct NcclLibraryInfo {
  std::string path;     // the library file, as the dynamic loader names it
  int version = 0;      // ncclGetVersion: e.g. 22809 for 2.28.9
  std::string source;   // how it was found: "already loaded", "BAGUA_NCCL_LIBRARY", ...
};

// Binds the functions on first use (thread-safe) and says where from;
// throws NotAvailable naming every place it looked when no NCCL is found,
// or one older than 2.12 (no ncclGetLastError).
const NcclLibraryInfo& ncclLibrary();

ncclResult_t ncclGetVersion(int* version);
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
// With an NCCL older than 2.28 (whose config has fewer fields) the config is
// not passed: this is ncclCommInitRank.
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
const char* ncclGetErrorString(ncclResult_t result);
const char* ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();

}  // namespace bagua
