// ByteGrad against fp32 gradient allreduce on the same gradients, over NCCL
// (issue "Runtime, part 1" target: >= 3x faster on 100 MiB of gradients over
// NCCL's network transport with Bagua-Net rate-limited to 10 Gbit/s). Two
// forked ranks, one per GPU; each step marks every gradient ready and waits
// for the Reducer, as a training step's backward would. Algorithms are
// measured interleaved (A B A B ...), min/median/max of step times.
//
//   bytegrad_bench [--mib 100] [--tensor-mib 4] [--steps 10] [--reps 3]
// Transport choice is NCCL's environment (NCCL_NET, NCCL_NET_PLUGIN, ...).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "posix/local_ranks.h"
#include "runtime/algorithms/bytegrad.h"
#include "runtime/algorithms/gradient_allreduce.h"
#include "runtime/comm/nccl_communicator.h"
#include "runtime/ops/cuda_ops.h"
#include "runtime/reducer/reducer.h"
#include "runtime/store/file_store.h"

namespace {

struct Args {
  size_t mib = 100;
  size_t tensorMib = 4;
  int steps = 10;
  int reps = 3;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    long v = std::atol(argv[i + 1]);
    if (k == "--mib")
      a.mib = static_cast<size_t>(v);
    else if (k == "--tensor-mib")
      a.tensorMib = static_cast<size_t>(v);
    else if (k == "--steps")
      a.steps = static_cast<int>(v);
    else if (k == "--reps")
      a.reps = static_cast<int>(v);
    else {
      std::fprintf(stderr,
                   "usage: bytegrad_bench [--mib N] [--tensor-mib N] [--steps N] [--reps N]\n");
      std::exit(2);
    }
  }
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int runRank(const Args& a, int rank, const std::string& dir) {
  bagua::FileStore store(dir);
  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  if (ndev < 1) {
    std::fprintf(stderr, "no GPU\n");
    return 1;
  }
  auto comm = std::make_shared<bagua::NcclCommunicator>(store, rank, 2, rank % ndev,
                                                        bagua::NcclCommunicator::Options{});
  auto ops = std::make_shared<bagua::CudaOps>(*comm);
  size_t perTensor = a.tensorMib << 18;  // floats
  size_t tensors = (a.mib + a.tensorMib - 1) / a.tensorMib;
  std::vector<void*> bufs(tensors);
  std::vector<bagua::TensorSpec> specs;
  std::vector<float> host(perTensor);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<float>((i * 7919 + rank) % 1000) / 1000 - 0.5f;
  for (size_t t = 0; t < tensors; ++t) {
    cudaMalloc(&bufs[t], perTensor * sizeof(float));
    cudaMemcpy(bufs[t], host.data(), perTensor * sizeof(float), cudaMemcpyHostToDevice);
    specs.push_back({"g" + std::to_string(t), bufs[t], perTensor, bagua::DType::kFloat32,
                     bagua::Device::kCuda});
  }
  bagua::Reducer::Options ro;  // 10 MiB buckets, Bagua's default
  ro.storePrefix = "allreduce";
  bagua::Reducer allreduce(comm, ops, std::make_shared<bagua::GradientAllreduce>(), specs, store,
                           ro);
  ro.storePrefix = "bytegrad";
  bagua::Reducer bytegrad(comm, ops, std::make_shared<bagua::ByteGrad>(), specs, store, ro);
  bagua::Reducer* reducers[2] = {&allreduce, &bytegrad};
  const char* names[2] = {"fp32 allreduce", "bytegrad"};
  std::vector<double> ms[2];
  for (int rep = 0; rep < a.reps; ++rep) {
    for (int k = 0; k < 2; ++k) {
      reducers[k]->wait();  // warm-up step
      for (int s = 0; s < a.steps; ++s) {
        auto t0 = std::chrono::steady_clock::now();
        reducers[k]->markAllReady();
        reducers[k]->wait();
        ms[k].push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
    }
  }
  if (rank == 0) {
    double bytes = static_cast<double>(tensors * perTensor * sizeof(float));
    std::printf(
        "# %zu MiB of fp32 gradients in %zu tensors, 2 ranks, %d steps x %d reps interleaved\n",
        tensors * a.tensorMib, tensors, a.steps, a.reps);
    std::printf("%-16s %10s %10s %10s %12s\n", "algorithm", "min ms", "median ms", "max ms",
                "grad GB/s");
    for (int k = 0; k < 2; ++k) {
      auto [lo, hi] = std::minmax_element(ms[k].begin(), ms[k].end());
      double med = median(ms[k]);
      std::printf("%-16s %10.2f %10.2f %10.2f %12.2f\n", names[k], *lo, med, *hi,
                  bytes / med / 1e6);
    }
    std::printf("bytegrad speed-up (median step time): %.2fx\n", median(ms[0]) / median(ms[1]));
  }
  for (void* p : bufs) cudaFree(p);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  return bagua::posix::mainExitCode(bagua::posix::runLocalRanks(
      2, [&](int rank, const std::string& dir) { return runRank(a, rank, dir); }));
}
