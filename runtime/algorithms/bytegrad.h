// ByteGrad (Bagua's ByteGradAlgorithm, non-hierarchical): 8-bit min-max
// quantized gradient averaging, bit-compatible with the original's math.
//
// Per bucket of N elements over n ranks (N a multiple of n), chunk c = N/n:
//  1. compress all n chunks (each its own min/max) into `send`;
//  2. alltoall: slot j of `recv` is rank j's compressed copy of my chunk;
//  3. decompress the n slots into the bucket (used as scratch) and reduce
//     them (sum or mean, fp32 accumulation) into chunk `rank`;
//  4. compress my reduced chunk (fresh min/max) into `own`;
//  5. allgather the compressed chunks into `gathered`; decompress into the
//     bucket. Every rank ends with bit-identical values.
// Wire bytes per rank ~ 2 (n-1) (c + 32): about 1/4 of an fp32 allreduce.
//
// Error feedback (off by default; the original had none): the quantization
// error of step 1 is kept per bucket and added to the next step's gradient
// before it is compressed, so it is not lost but delayed.
//
// Codec (ours): MinMaxUInt8 (Bagua's, the default) or MinMaxUInt4
// (kernels/minmax_uint4.h: 4 bits, a range per 512 elements), with the same
// steps; DiLoCo's outer gradients use either.
#pragma once

#include <memory>
#include <vector>

#include "runtime/algorithms/algorithm.h"
#include "runtime/algorithms/registry.h"

namespace bagua {

class ByteGrad final : public Algorithm {
 public:
  struct Options {
    bool average = true;         // mean over ranks (false: sum)
    bool errorFeedback = false;  // carry step 1's quantization error forward
    enum class Codec { kMinMaxUInt8, kMinMaxUInt4 } codec = Codec::kMinMaxUInt8;
  };
  ByteGrad() : ByteGrad(Options{}) {}
  explicit ByteGrad(Options options) : options_(options) {}

  const char* name() const override { return "bytegrad"; }
  size_t bucketAlignment(int worldSize) const override { return static_cast<size_t>(worldSize); }
  void setup(const std::vector<BucketLayout>& buckets, Communicator& comm, DeviceOps& ops) override;
  std::shared_ptr<Work> communicate(BucketContext& bucket) override;
  DeviceBuffer* elementState(size_t bucket) override { return residual(bucket); }

  // Bytes of one compressed chunk of `elems` elements in this codec.
  size_t compressedBytes(size_t elems) const;
  // Bucket `bucket`'s error-feedback residual (nullptr without error
  // feedback): state a checkpoint must keep (DiLoCo saves it).
  DeviceBuffer* residual(size_t bucket);

 private:
  void compress(DeviceOps& ops, DType dtype, const void* src, size_t chunk, int n, int target,
                uint8_t* dst) const;
  void decompress(DeviceOps& ops, DType dtype, const uint8_t* src, size_t chunk, int n,
                  void* dst) const;

  struct Scratch {
    std::unique_ptr<DeviceBuffer> send;      // n compressed chunks
    std::unique_ptr<DeviceBuffer> recv;      // n compressed chunks
    std::unique_ptr<DeviceBuffer> own;       // my compressed reduced chunk
    std::unique_ptr<DeviceBuffer> gathered;  // n compressed chunks
    std::unique_ptr<DeviceBuffer> residual;  // error feedback (N elements)
    std::unique_ptr<DeviceBuffer> decoded;   // error feedback scratch (N elements)
  };

  Options options_;
  std::vector<Scratch> scratch_;
};

// Its registry entry ("bytegrad").
AlgorithmInfo byteGradInfo();

}  // namespace bagua
