// DeviceTensorList (optim_cuda.h): the list's addresses, its segment plan
// and LAMB's work space (with several batches, its queue: lamb_schedule.h)
// in one device allocation, uploaded once.
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/optim/lamb_schedule.h"
#include "kernels/optim/multi_tensor.cuh"

namespace bagua::kernels::optim {
namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("DeviceTensorList: ") + what + ": " +
                             cudaGetErrorString(err));
  }
}

// Appends the bytes of `v` to `host`, 8-byte aligned; returns their offset.
template <typename T>
size_t append(std::vector<unsigned char>& host, const std::vector<T>& v) {
  const size_t at = (host.size() + 7) / 8 * 8;
  host.resize(at + v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(host.data() + at, v.data(), v.size() * sizeof(T));
  return at;
}

}  // namespace

DeviceTensorList::DeviceTensorList(const std::vector<TensorRef>& tensors, ListTypes types,
                                   size_t chunkElems, LambLayout lamb, int packElems)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.mask = checkList("DeviceTensorList", tensors, types);
  if (packElems != kAutoPack && packElems != 4 && packElems != 8) {
    throw std::invalid_argument("DeviceTensorList: packElems " + std::to_string(packElems) +
                                "; expected 0 (auto), 4 or 8");
  }
  im.packElems = packElems != kAutoPack ? packElems : types.param == DType::kFloat32 ? 4 : 8;
  im.types = types;
  im.tensors = tensors.size();
  std::vector<size_t> numel;
  numel.reserve(tensors.size());
  for (const TensorRef& t : tensors) {
    numel.push_back(t.numel);
    im.elements += t.numel;
  }
  SegmentPlan plan = planSegments(numel, chunkElems, lamb.batchElems);
  im.blocks = plan.blocks();
  im.batches = plan.batches;
  LambSchedule schedule;
  if (plan.batches.size() > 1) {
    im.lambGrid = lambQueueGrid(im, lamb.blocksPerSm);
    schedule = planLambSchedule(plan.batches, lamb.lookahead > 0 ? lamb.lookahead : im.lambGrid);
  }

  std::vector<uint64_t> ptrs(static_cast<size_t>(kSlots) * tensors.size());
  for (int s = 0; s < kSlots; ++s) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      ptrs[s * tensors.size() + i] = reinterpret_cast<uint64_t>(tensors[i].ptr[s]);
    }
  }
  std::vector<unsigned char> host;
  const size_t ptrsAt = append(host, ptrs);
  const size_t segTensorAt = append(host, plan.segTensor);
  const size_t segOffsetAt = append(host, plan.segOffset);
  const size_t segLengthAt = append(host, plan.segLength);
  const size_t blockBeginAt = append(host, plan.blockBegin);
  const size_t tensorBeginAt = append(host, plan.tensorBegin);
  const size_t partialAt = append(host, std::vector<float>(2 * plan.segTensor.size()));
  const size_t trustAt = append(host, std::vector<float>(tensors.size()));
  const size_t itemsAt = append(host, schedule.items);
  const size_t blockBatchAt = append(host, schedule.blockBatch);
  const size_t batchesAt = append(host, plan.batches);
  const size_t firstPassDoneAt = append(host, std::vector<uint32_t>(plan.batches.size()));
  const size_t readyAt = append(host, std::vector<uint32_t>(plan.batches.size()));
  const size_t countersAt = append(host, std::vector<uint32_t>(3));

  check(cudaMalloc(&im.memory, host.size()), "cudaMalloc");
  cudaError_t err = cudaMemcpy(im.memory, host.data(), host.size(), cudaMemcpyHostToDevice);
  if (err != cudaSuccess) {
    cudaFree(im.memory);
    check(err, "cudaMemcpy");
  }
  auto* base = static_cast<unsigned char*>(im.memory);
  DeviceTable& t = im.table;
  t.ptrs = reinterpret_cast<const uint64_t*>(base + ptrsAt);
  t.segTensor = reinterpret_cast<const uint32_t*>(base + segTensorAt);
  t.segOffset = reinterpret_cast<const uint64_t*>(base + segOffsetAt);
  t.segLength = reinterpret_cast<const uint32_t*>(base + segLengthAt);
  t.blockBegin = reinterpret_cast<const uint32_t*>(base + blockBeginAt);
  t.tensorBegin = reinterpret_cast<const uint32_t*>(base + tensorBeginAt);
  t.partial = reinterpret_cast<float*>(base + partialAt);
  t.trust = reinterpret_cast<float*>(base + trustAt);
  t.n = static_cast<uint32_t>(tensors.size());
  if (!schedule.items.empty()) {
    LambQueue& q = im.queue;
    q.items = reinterpret_cast<const uint32_t*>(base + itemsAt);
    q.blockBatch = reinterpret_cast<const uint32_t*>(base + blockBatchAt);
    q.batches = reinterpret_cast<const Batch*>(base + batchesAt);
    q.firstPassDone = reinterpret_cast<uint32_t*>(base + firstPassDoneAt);
    q.ready = reinterpret_cast<uint32_t*>(base + readyAt);
    q.counters = reinterpret_cast<uint32_t*>(base + countersAt);
    q.itemCount = static_cast<uint32_t>(schedule.items.size());
  }
}

DeviceTensorList::~DeviceTensorList() {
  if (impl_ && impl_->memory != nullptr) cudaFree(impl_->memory);
}

size_t DeviceTensorList::size() const { return impl_->tensors; }
size_t DeviceTensorList::numel() const { return impl_->elements; }
ListTypes DeviceTensorList::types() const { return impl_->types; }
unsigned DeviceTensorList::slotMask() const { return impl_->mask; }

}  // namespace bagua::kernels::optim
