// CountingCommunicator: forwards, then counts (an operation that throws
// before it is enqueued counts nothing).
#include "runtime/comm/counting_communicator.h"

namespace bagua {

CountingCommunicator::CountingCommunicator(std::shared_ptr<Communicator> inner)
    : inner_(std::move(inner)) {}

void CountingCommunicator::count(double bytes, double factor) {
  if (inner_->size() <= 1 || bytes <= 0 || factor <= 0) return;
  sent_.fetch_add(static_cast<uint64_t>(bytes * factor + 0.5), std::memory_order_relaxed);
}

std::shared_ptr<Work> CountingCommunicator::allreduce(void* data, size_t count, DType dtype,
                                                      ReduceOp op) {
  auto work = inner_->allreduce(data, count, dtype, op);
  const double n = size();
  this->count(static_cast<double>(count * dtypeSize(dtype)), 2 * (n - 1) / n);
  return work;
}

std::shared_ptr<Work> CountingCommunicator::reduce(const void* in, void* out, size_t count,
                                                   DType dtype, ReduceOp op, int root) {
  auto work = inner_->reduce(in, out, count, dtype, op, root);
  const double n = size();
  this->count(static_cast<double>(count * dtypeSize(dtype)), (n - 1) / n);
  return work;
}

std::shared_ptr<Work> CountingCommunicator::reduceScatter(const void* in, void* out,
                                                          size_t countPerRank, DType dtype,
                                                          ReduceOp op) {
  auto work = inner_->reduceScatter(in, out, countPerRank, dtype, op);
  count(static_cast<double>(countPerRank * dtypeSize(dtype)), size() - 1);
  return work;
}

std::shared_ptr<Work> CountingCommunicator::allgather(const void* in, void* out,
                                                      size_t bytesPerRank) {
  auto work = inner_->allgather(in, out, bytesPerRank);
  count(static_cast<double>(bytesPerRank), size() - 1);
  return work;
}

std::shared_ptr<Work> CountingCommunicator::gather(const void* in, void* out, size_t bytesPerRank,
                                                   int root) {
  auto work = inner_->gather(in, out, bytesPerRank, root);
  count(static_cast<double>(bytesPerRank), rank() == root ? 0 : 1);
  return work;
}

std::shared_ptr<Work> CountingCommunicator::scatter(const void* in, void* out, size_t bytesPerRank,
                                                    int root) {
  auto work = inner_->scatter(in, out, bytesPerRank, root);
  count(static_cast<double>(bytesPerRank), rank() == root ? size() - 1 : 0);
  return work;
}

std::shared_ptr<Work> CountingCommunicator::alltoall(const void* in, void* out,
                                                     size_t bytesPerRank) {
  auto work = inner_->alltoall(in, out, bytesPerRank);
  count(static_cast<double>(bytesPerRank), size() - 1);
  return work;
}

std::shared_ptr<Work> CountingCommunicator::alltoallv(
    const void* in, const std::vector<size_t>& sendBytes, const std::vector<size_t>& sendOffsets,
    void* out, const std::vector<size_t>& recvBytes, const std::vector<size_t>& recvOffsets) {
  auto work = inner_->alltoallv(in, sendBytes, sendOffsets, out, recvBytes, recvOffsets);
  double others = 0;
  for (size_t j = 0; j < sendBytes.size(); ++j) {
    if (static_cast<int>(j) != rank()) others += static_cast<double>(sendBytes[j]);
  }
  count(others, 1);
  return work;
}

std::shared_ptr<Work> CountingCommunicator::broadcast(void* data, size_t bytes, int root) {
  auto work = inner_->broadcast(data, bytes, root);
  const double n = size();
  count(static_cast<double>(bytes), rank() == root ? 1 : (n - 2) / (n - 1));
  return work;
}

std::shared_ptr<Work> CountingCommunicator::send(const void* data, size_t bytes, int peer) {
  auto work = inner_->send(data, bytes, peer);
  count(static_cast<double>(bytes), 1);
  return work;
}

std::shared_ptr<Work> CountingCommunicator::recv(void* data, size_t bytes, int peer) {
  return inner_->recv(data, bytes, peer);
}

}  // namespace bagua
