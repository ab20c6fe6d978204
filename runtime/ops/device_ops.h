// The compute steps of algorithms (copies, quantize, reduce, scale), ordered
// with the communicator's operations: on CPU they run on the Gloo worker
// thread between its collectives; on CUDA they are kernels on the
// communicator's stream. Either way the host only enqueues.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/comm/types.h"
#include "runtime/comm/work.h"

namespace bagua {

// Memory on the ops' device, freed on destruction.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual void* data() = 0;
  virtual size_t bytes() const = 0;
};

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  // Where the buffers these ops work on live.
  virtual Device device() const = 0;
  // Allocates `bytes` (zeroed) on the device.
  virtual std::unique_ptr<DeviceBuffer> allocate(size_t bytes) = 0;
  // dst <- src, `bytes` bytes (either may be host memory: CUDA copies by
  // unified addressing).
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // Sets `bytes` bytes to zero.
  virtual void zero(void* dst, size_t bytes) = 0;
  // MinMaxUInt8 quantization of nChunks chunks (target < 0) or of chunk
  // `target` only (kernels/minmax_uint8.h).
  virtual void compress(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                        uint8_t* dst) = 0;
  // Inverse of compress for nChunks chunks.
  virtual void decompress(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks,
                          void* dst) = 0;
  // MinMaxUInt4 (kernels/minmax_uint4.h), same arguments as compress.
  virtual void compress4(DType dtype, const void* src, size_t chunkElems, int nChunks, int target,
                         uint8_t* dst) = 0;
  // Inverse of compress4 for nChunks chunks.
  virtual void decompress4(DType dtype, const uint8_t* src, size_t chunkElems, int nChunks,
                           void* dst) = 0;
  // Sum (or mean) of nChunks consecutive chunks of `data` into chunk `target`.
  virtual void reduceChunks(DType dtype, void* data, size_t chunkElems, int nChunks, int target,
                            bool average) = 0;
  // out = a + alpha * b, element-wise over n elements (out may alias a).
  virtual void addScaled(DType dtype, void* out, const void* a, const void* b, size_t n,
                         float alpha) = 0;
  // out = a - b, or 0 where that is not finite (kernels::residualCpu).
  virtual void residual(DType dtype, void* out, const void* a, const void* b, size_t n) = 0;
  // A Work that finishes once every step enqueued before it has.
  virtual std::shared_ptr<Work> fence(std::string what) = 0;
};

}  // namespace bagua
