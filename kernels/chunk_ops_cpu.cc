// CPU reference of the element-wise steps around MinMaxUInt8
// (minmax_uint8.h): chunk reduction in Bagua's order, scale, addScaled.
#include <cstddef>

#include "kernels/chunk_args.h"
#include "kernels/cpu_elements.h"
#include "kernels/minmax_uint8.h"
#include "kernels/minmax_uint8_math.h"

namespace bagua::kernels {
namespace {

template <typename E>
void reduceAll(void* data, size_t chunkElems, int nChunks, int target, bool average) {
  auto* x = static_cast<typename E::Bits*>(data);
  auto* out = x + static_cast<size_t>(target) * chunkElems;
  baguaReduceBlocks(
      chunkElems, nChunks,
      [&](int c, size_t base, size_t m, float* row) {
        const auto* in = x + static_cast<size_t>(c) * chunkElems + base;
        for (size_t i = 0; i < m; ++i) row[i] = row[i] + E::toFloat(in[i]);
      },
      [&](size_t base, size_t m, const float* sums) {
        for (size_t i = 0; i < m; ++i) {
          out[base + i] = E::fromFloat(minmax::finishReduce(sums[i], nChunks, average));
        }
      });
}

template <typename E>
void scaleAll(void* data, size_t n, float factor) {
  auto* x = static_cast<typename E::Bits*>(data);
  for (size_t i = 0; i < n; ++i) x[i] = E::fromFloat(E::toFloat(x[i]) * factor);
}

template <typename E>
void addScaledAll(void* out, const void* a, const void* b, size_t n, float alpha) {
  auto* o = static_cast<typename E::Bits*>(out);
  const auto* x = static_cast<const typename E::Bits*>(a);
  const auto* y = static_cast<const typename E::Bits*>(b);
  for (size_t i = 0; i < n; ++i) {
    const float scaled = alpha * E::toFloat(y[i]);  // rounded: no FMA (-ffp-contract=off)
    o[i] = E::fromFloat(E::toFloat(x[i]) + scaled);
  }
}

template <typename E>
void residualAll(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<typename E::Bits*>(out);
  const auto* x = static_cast<const typename E::Bits*>(a);
  const auto* y = static_cast<const typename E::Bits*>(b);
  const typename E::Bits zero = E::fromFloat(0.0f);
  for (size_t i = 0; i < n; ++i) {
    const typename E::Bits r = E::fromFloat(E::toFloat(x[i]) - E::toFloat(y[i]));
    o[i] = minmax::isFiniteHd(E::toFloat(r)) ? r : zero;
  }
}

}  // namespace

void reduceChunksCpu(DType dtype, void* data, size_t chunkElems, int nChunks, int target,
                     bool average) {
  checkChunkArgs("reduceChunksCpu", dtype, chunkElems, nChunks, target, true);
  dispatchCpu(dtype,
              [&](auto e) { reduceAll<decltype(e)>(data, chunkElems, nChunks, target, average); });
}

void scaleCpu(DType dtype, void* data, size_t n, float factor) {
  checkElementArgs("scaleCpu", dtype, n);
  dispatchCpu(dtype, [&](auto e) { scaleAll<decltype(e)>(data, n, factor); });
}

void addScaledCpu(DType dtype, void* out, const void* a, const void* b, size_t n, float alpha) {
  checkElementArgs("addScaledCpu", dtype, n);
  dispatchCpu(dtype, [&](auto e) { addScaledAll<decltype(e)>(out, a, b, n, alpha); });
}

void residualCpu(DType dtype, void* out, const void* a, const void* b, size_t n) {
  checkElementArgs("residualCpu", dtype, n);
  dispatchCpu(dtype, [&](auto e) { residualAll<decltype(e)>(out, a, b, n); });
}

}  // namespace bagua::kernels
