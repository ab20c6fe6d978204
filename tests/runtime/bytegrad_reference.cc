// The CPU reference of a ByteGrad step (bytegrad_reference.h).
#include "tests/runtime/bytegrad_reference.h"

#include <algorithm>
#include <cstdint>

#include "kernels/minmax_uint8.h"

namespace bagua::testing {

std::vector<float> flattenBucket(const BucketLayout& b,
                                 const std::function<std::vector<float>(size_t tensor)>& tensorOf) {
  std::vector<float> flat(b.paddedNumel, 0.0f);
  for (const BucketSlot& slot : b.slots) {
    std::vector<float> t = tensorOf(slot.tensor);
    std::copy(t.begin(), t.end(), flat.begin() + static_cast<std::ptrdiff_t>(slot.offset));
  }
  return flat;
}

std::vector<float> bytegradReference(const std::vector<std::vector<float>>& inputs, int size) {
  if (size == 1) return inputs[0];  // one rank's average, not compressed
  size_t numel = inputs[0].size();
  size_t chunk = numel / static_cast<size_t>(size);
  size_t stride = kernels::compressedChunkBytes(chunk);
  std::vector<std::vector<uint8_t>> sent(static_cast<size_t>(size),
                                         std::vector<uint8_t>(stride * size));
  for (int r = 0; r < size; ++r) {
    kernels::compressCpu(DType::kFloat32, inputs[r].data(), chunk, size, -1, sent[r].data());
  }
  std::vector<float> out(numel);
  for (int c = 0; c < size; ++c) {  // the chunk rank c reduces
    std::vector<float> slots(numel);
    for (int j = 0; j < size; ++j) {
      kernels::decompressCpu(DType::kFloat32, sent[j].data() + stride * c, chunk, 1,
                             slots.data() + chunk * j);
    }
    kernels::reduceChunksCpu(DType::kFloat32, slots.data(), chunk, size, c, true);
    std::vector<uint8_t> own(stride);
    kernels::compressCpu(DType::kFloat32, slots.data(), chunk, size, c, own.data());
    kernels::decompressCpu(DType::kFloat32, own.data(), chunk, 1, out.data() + chunk * c);
  }
  return out;
}

}  // namespace bagua::testing
