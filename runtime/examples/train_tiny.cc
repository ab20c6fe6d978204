// Trains a tiny linear model y = W x + b across processes with Bagua's
// algorithms through the C++ API (CPU tensors, Gloo): each rank computes the
// gradient of its own shard of a synthetic regression task, the Reducer
// averages the gradients with the chosen algorithm, every rank applies SGD.
// Prints the loss as training goes and checks that every rank ends with the
// same parameters.
//
//   train_tiny --ranks 4 --algorithm bytegrad [--steps 200] [--error-feedback]

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "posix/local_ranks.h"
#include "runtime/algorithms/bytegrad.h"
#include "runtime/algorithms/gradient_allreduce.h"
#include "runtime/comm/gloo_communicator.h"
#include "runtime/ops/cpu_ops.h"
#include "runtime/reducer/reducer.h"
#include "runtime/store/file_store.h"

namespace {

constexpr int kIn = 32;
constexpr int kOut = 16;
constexpr int kBatch = 64;

struct Args {
  int ranks = 2;
  int steps = 200;
  std::string algorithm = "gradient_allreduce";
  bool errorFeedback = false;
  float lr = 0.05f;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", k.c_str());
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (k == "--ranks") {
      a.ranks = std::atoi(next().c_str());
    } else if (k == "--steps") {
      a.steps = std::atoi(next().c_str());
    } else if (k == "--algorithm") {
      a.algorithm = next();
    } else if (k == "--error-feedback") {
      a.errorFeedback = true;
    } else if (k == "--lr") {
      a.lr = std::strtof(next().c_str(), nullptr);
    } else {
      std::fprintf(stderr,
                   "usage: train_tiny [--ranks N] [--steps S] [--algorithm gradient_allreduce|"
                   "bytegrad] [--error-feedback] [--lr LR]\n");
      std::exit(2);
    }
  }
  if (a.ranks < 1 || a.steps < 1) {
    std::fprintf(stderr, "--ranks and --steps must be positive\n");
    std::exit(2);
  }
  return a;
}

std::shared_ptr<bagua::Algorithm> makeAlgorithm(const Args& a) {
  if (a.algorithm == "gradient_allreduce") return std::make_shared<bagua::GradientAllreduce>();
  if (a.algorithm == "bytegrad") {
    bagua::ByteGrad::Options o;
    o.errorFeedback = a.errorFeedback;
    return std::make_shared<bagua::ByteGrad>(o);
  }
  std::fprintf(stderr, "unknown algorithm '%s' (gradient_allreduce, bytegrad)\n",
               a.algorithm.c_str());
  std::exit(2);
}

int runRank(const Args& args, int rank, const std::string& storeDir) {
  bagua::FileStore store(storeDir);
  bagua::GlooCommunicator::Options go;
  go.iface = "lo";
  auto comm = std::make_shared<bagua::GlooCommunicator>(store, rank, args.ranks, go);
  auto ops = std::make_shared<bagua::CpuOps>(*comm);

  // The teacher and the data shards: the same teacher everywhere, a
  // different stream of inputs per rank.
  std::mt19937 teacherGen(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> teacher(kOut * kIn);
  for (float& t : teacher) t = normal(teacherGen);
  std::vector<float> w(kOut * kIn, 0.0f), b(kOut, 0.0f);
  std::vector<float> gw(w.size()), gb(b.size());
  std::vector<bagua::TensorSpec> specs = {
      {"weight.grad", gw.data(), gw.size(), bagua::DType::kFloat32, bagua::Device::kCpu},
      {"bias.grad", gb.data(), gb.size(), bagua::DType::kFloat32, bagua::Device::kCpu}};
  bagua::Reducer::Options ro;
  ro.bucketBytes = 1024;  // several buckets even for this tiny model
  bagua::Reducer reducer(comm, ops, makeAlgorithm(args), specs, store, ro);

  std::mt19937 dataGen(1000 + static_cast<uint32_t>(rank));
  std::vector<float> x(kBatch * kIn), y(kBatch * kOut);
  for (int step = 0; step < args.steps; ++step) {
    for (float& v : x) v = normal(dataGen);
    for (int n = 0; n < kBatch; ++n) {
      for (int o = 0; o < kOut; ++o) {
        float acc = 0;
        for (int i = 0; i < kIn; ++i) acc += teacher[o * kIn + i] * x[n * kIn + i];
        y[n * kOut + o] = acc;
      }
    }
    // Forward and the gradient of the mean squared error.
    std::fill(gw.begin(), gw.end(), 0.0f);
    std::fill(gb.begin(), gb.end(), 0.0f);
    double loss = 0;
    for (int n = 0; n < kBatch; ++n) {
      for (int o = 0; o < kOut; ++o) {
        float pred = b[o];
        for (int i = 0; i < kIn; ++i) pred += w[o * kIn + i] * x[n * kIn + i];
        float err = pred - y[n * kOut + o];
        loss += err * err;
        float g = 2.0f * err / (kBatch * kOut);
        gb[o] += g;
        for (int i = 0; i < kIn; ++i) gw[o * kIn + i] += g * x[n * kIn + i];
      }
    }
    reducer.markReady(1);  // backward produces the bias gradient first
    reducer.markReady(0);
    reducer.wait();
    for (size_t i = 0; i < w.size(); ++i) w[i] -= args.lr * gw[i];
    for (size_t i = 0; i < b.size(); ++i) b[i] -= args.lr * gb[i];
    if (rank == 0 && (step % 20 == 0 || step + 1 == args.steps)) {
      std::printf("step %4d  loss %.6f\n", step, loss / (kBatch * kOut));
      std::fflush(stdout);
    }
  }
  // Every rank must hold the same parameters.
  std::vector<uint8_t> mine(reinterpret_cast<uint8_t*>(w.data()),
                            reinterpret_cast<uint8_t*>(w.data() + w.size()));
  store.set("final/" + std::to_string(rank), mine);
  for (int r = 0; r < args.ranks; ++r) {
    if (store.get("final/" + std::to_string(r), std::chrono::seconds(60)) != mine) {
      std::fprintf(stderr, "rank %d: parameters differ from rank %d\n", rank, r);
      return 3;
    }
  }
  if (rank == 0) std::printf("all %d ranks hold identical parameters\n", args.ranks);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  return bagua::posix::mainExitCode(bagua::posix::runLocalRanks(
      args.ranks, [&](int rank, const std::string& dir) { return runRank(args, rank, dir); }));
}
