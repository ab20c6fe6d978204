// minmax_uint8_bench: GPU throughput of the MinMaxUInt8 kernels next to a
// device-to-device cudaMemcpyAsync of the same bytes, measured in the same
// run (issue target: compress and decompress >= 70% of the copy's bandwidth
// from 64 MiB up). Flags follow nccl-tests where they apply.
//
//   -b MIN -e MAX -f FACTOR   buffer sizes in bytes of elements (K/M/G), x FACTOR
//   -n ITERS -w WARMUP        timed and untimed repetitions of every operation
//   -d float32,float16,...    dtypes;  -k 1,2,8  chunk counts
//   -c 0|1                    check results against the CPU reference (default 1)
//
// Every repetition is timed alone with a pair of CUDA events. GB/s = bytes of
// elements (chunkElems * nChunks * sizeof(dtype)) / time, for every row,
// copy included, so "%copy" compares like with like. Rows: copy, compress
// (all chunks), compress1 (target 0: one chunk), decompress, reduce
// (reduceChunks into chunk 0).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/float_bits.h"
#include "kernels/minmax_uint8.h"
#include "kernels/minmax_uint8_cuda.h"

namespace {

using bagua::DType;
namespace kernels = bagua::kernels;

#define BENCH_CUDA(call)                                                 \
  do {                                                                   \
    cudaError_t bench_status = (call);                                   \
    if (bench_status != cudaSuccess) {                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(bench_status));                    \
      std::exit(1);                                                      \
    }                                                                    \
  } while (false)

struct Options {
  size_t minBytes = size_t{64} << 20;
  size_t maxBytes = size_t{1} << 30;
  double factor = 2;
  int iters = 20;
  int warmup = 5;
  std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16};
  std::vector<int> chunkCounts = {1, 2, 8};
  bool check = true;
};

size_t parseBytes(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  switch (*end) {
    case 'K':
    case 'k':
      v *= 1 << 10;
      break;
    case 'M':
    case 'm':
      v *= 1 << 20;
      break;
    case 'G':
    case 'g':
      v *= 1 << 30;
      break;
    default:
      break;
  }
  return static_cast<size_t>(v);
}

std::vector<std::string> split(const char* s) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = s; *p != '\0'; ++p) {
    if (*p == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += *p;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "-b")
      o.minBytes = parseBytes(v);
    else if (flag == "-e")
      o.maxBytes = parseBytes(v);
    else if (flag == "-f")
      o.factor = std::atof(v);
    else if (flag == "-n")
      o.iters = std::atoi(v);
    else if (flag == "-w")
      o.warmup = std::atoi(v);
    else if (flag == "-c")
      o.check = std::atoi(v) != 0;
    else if (flag == "-k") {
      o.chunkCounts.clear();
      for (const std::string& k : split(v)) o.chunkCounts.push_back(std::atoi(k.c_str()));
    } else if (flag == "-d") {
      o.dtypes.clear();
      for (const std::string& d : split(v)) {
        o.dtypes.push_back(d == "float16"    ? DType::kFloat16
                           : d == "bfloat16" ? DType::kBFloat16
                                             : DType::kFloat32);
      }
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  if (o.factor <= 1 || o.iters < 1 || o.minBytes == 0) {
    std::fprintf(stderr, "need -f > 1, -n >= 1, -b > 0\n");
    std::exit(2);
  }
  return o;
}

// Host buffer of uniform values in [-1, 1) (64-bit LCG), as dtype bits.
std::vector<uint8_t> randomElements(DType dtype, size_t elems) {
  std::vector<uint8_t> out(elems * bagua::dtypeSize(dtype));
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < elems; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float v = static_cast<float>(state >> 40) * 0x1p-23f - 1.0f;
    if (dtype == DType::kFloat32) {
      std::memcpy(out.data() + 4 * i, &v, 4);
    } else {
      const uint16_t h =
          dtype == DType::kFloat16 ? kernels::floatToHalf(v) : kernels::floatToBf16(v);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

struct Stats {
  float minMs, medianMs, maxMs;
};

Stats timeOp(const Options& o, cudaStream_t stream, const std::function<void()>& op) {
  for (int i = 0; i < o.warmup; ++i) op();
  cudaEvent_t start, stop;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  std::vector<float> ms(static_cast<size_t>(o.iters));
  for (float& t : ms) {
    BENCH_CUDA(cudaEventRecord(start, stream));
    op();
    BENCH_CUDA(cudaEventRecord(stop, stream));
    BENCH_CUDA(cudaEventSynchronize(stop));
    BENCH_CUDA(cudaEventElapsedTime(&t, start, stop));
  }
  BENCH_CUDA(cudaEventDestroy(start));
  BENCH_CUDA(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2], ms.back()};
}

std::vector<uint8_t> download(const void* p, size_t bytes) {
  std::vector<uint8_t> h(bytes);
  BENCH_CUDA(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  cudaDeviceProp prop{};
  int device = 0;
  BENCH_CUDA(cudaGetDevice(&device));
  BENCH_CUDA(cudaGetDeviceProperties(&prop, device));
  std::printf("# minmax_uint8_bench on %s (%d SMs), %d iters, %d warmup\n", prop.name,
              prop.multiProcessorCount, o.iters, o.warmup);
  std::printf("# GB/s = element bytes / time; %%copy = median GB/s / copy's median GB/s\n");
  std::printf("#%9s %12s %6s %-10s %9s %9s %9s %8s %8s %8s %6s %s\n", "dtype", "bytes", "chunks",
              "op", "min_us", "med_us", "max_us", "GB/s_max", "GB/s_med", "GB/s_min", "%copy",
              "check");
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreate(&stream));
  int failures = 0;
  for (DType dtype : o.dtypes) {
    const size_t width = bagua::dtypeSize(dtype);
    const std::vector<uint8_t> host = randomElements(dtype, o.maxBytes / width);
    void* src = nullptr;
    void* dst = nullptr;
    uint8_t* packed = nullptr;
    const int maxChunks = *std::max_element(o.chunkCounts.begin(), o.chunkCounts.end());
    const size_t maxPacked = o.maxBytes / width + 64 * static_cast<size_t>(maxChunks);
    BENCH_CUDA(cudaMalloc(&src, o.maxBytes));
    BENCH_CUDA(cudaMalloc(&dst, o.maxBytes));
    BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&packed), maxPacked));
    BENCH_CUDA(cudaMemcpy(src, host.data(), host.size(), cudaMemcpyHostToDevice));
    for (size_t bytes = o.minBytes; bytes <= o.maxBytes;
         bytes = static_cast<size_t>(static_cast<double>(bytes) * o.factor)) {
      for (int chunks : o.chunkCounts) {
        const size_t chunkElems = bytes / width / static_cast<size_t>(chunks);
        const size_t elemBytes = chunkElems * static_cast<size_t>(chunks) * width;
        const size_t stride = kernels::compressedChunkBytes(chunkElems);
        std::string check = "-";
        if (o.check) {
          std::vector<uint8_t> cpuPacked(stride * static_cast<size_t>(chunks));
          kernels::compressCpu(dtype, host.data(), chunkElems, chunks, -1, cpuPacked.data());
          BENCH_CUDA(kernels::compress(dtype, src, chunkElems, chunks, -1, packed, stream));
          BENCH_CUDA(kernels::decompress(dtype, packed, chunkElems, chunks, dst, stream));
          BENCH_CUDA(cudaStreamSynchronize(stream));
          std::vector<uint8_t> cpuOut(elemBytes);
          kernels::decompressCpu(dtype, cpuPacked.data(), chunkElems, chunks, cpuOut.data());
          const bool ok =
              download(packed, cpuPacked.size()) == cpuPacked && download(dst, elemBytes) == cpuOut;
          check = ok ? "ok" : "MISMATCH";
          failures += ok ? 0 : 1;
        }
        const std::pair<const char*, std::function<void()>> ops[] = {
            {"copy",
             [&] {
               BENCH_CUDA(cudaMemcpyAsync(dst, src, elemBytes, cudaMemcpyDeviceToDevice, stream));
             }},
            {"compress",
             [&] {
               BENCH_CUDA(kernels::compress(dtype, src, chunkElems, chunks, -1, packed, stream));
             }},
            {"compress1",
             [&] {
               BENCH_CUDA(kernels::compress(dtype, src, chunkElems, chunks, 0, packed, stream));
             }},
            {"decompress",
             [&] {
               BENCH_CUDA(kernels::decompress(dtype, packed, chunkElems, chunks, dst, stream));
             }},
            {"reduce",
             [&] {
               BENCH_CUDA(kernels::reduceChunks(dtype, dst, chunkElems, chunks, 0, true, stream));
             }},
        };
        double copyMedian = 0;
        for (const auto& [name, op] : ops) {
          const Stats s = timeOp(o, stream, op);
          // compress1 quantizes one chunk only: its bytes are one chunk's.
          const double opBytes = std::strcmp(name, "compress1") == 0
                                     ? static_cast<double>(chunkElems * width)
                                     : static_cast<double>(elemBytes);
          const double gbMed = opBytes / (s.medianMs * 1e6);
          if (std::strcmp(name, "copy") == 0) copyMedian = gbMed;
          std::printf(" %9s %12zu %6d %-10s %9.1f %9.1f %9.1f %8.1f %8.1f %8.1f %5.0f%% %s\n",
                      bagua::dtypeName(dtype), elemBytes, chunks, name, s.minMs * 1e3,
                      s.medianMs * 1e3, s.maxMs * 1e3, opBytes / (s.minMs * 1e6), gbMed,
                      opBytes / (s.maxMs * 1e6), 100 * gbMed / copyMedian, check.c_str());
        }
      }
    }
    BENCH_CUDA(cudaFree(src));
    BENCH_CUDA(cudaFree(dst));
    BENCH_CUDA(cudaFree(packed));
  }
  BENCH_CUDA(cudaStreamDestroy(stream));
  if (failures > 0) std::printf("# %d configurations differ from the CPU reference\n", failures);
  return failures > 0 ? 1 : 0;
}
