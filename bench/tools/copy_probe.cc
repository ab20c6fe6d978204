// copy_probe: how fast this CPU copies memory, window after window, with
// nothing else of ours running. On shared machines (VMs, noisy neighbours on
// the same cache and memory) this speed moves by itself; a loopback benchmark,
// which is mostly kernel copies, moves with it. Run it pinned (taskset) beside
// or between benchmark runs to see how much of a result's spread is the
// machine's.
//
//   usage: copy_probe [--seconds S] [--mib M] [--window-ms W]
//
// Copies one buffer of M MiB (default 64: beyond a core's L2, as a large
// message is) into another for S seconds (default 10) and prints the GB/s of
// each W ms window (default 200), then min / median / max and max/min.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  double seconds = 10;
  size_t mib = 64;
  int windowMs = 200;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "copy_probe: %s\nusage: copy_probe [--seconds S] [--mib M] [--window-ms W]\n", why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + flag).c_str());
    char* end = nullptr;
    double value = std::strtod(argv[++i], &end);
    if (*end != '\0' || value <= 0) usage(("bad value for " + flag).c_str());
    if (flag == "--seconds") {
      o.seconds = value;
    } else if (flag == "--mib") {
      o.mib = static_cast<size_t>(value);
    } else if (flag == "--window-ms") {
      o.windowMs = static_cast<int>(value);
    } else {
      usage(("unknown option " + flag).c_str());
    }
  }
  if (o.mib == 0 || o.windowMs == 0) usage("--mib and --window-ms must be at least 1");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  using Clock = std::chrono::steady_clock;
  size_t bytes = o.mib << 20;
  std::vector<char> from(bytes, 1);
  std::vector<char> to(bytes, 2);
  std::vector<double> rates;
  Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(o.seconds));
  while (Clock::now() < end) {
    Clock::time_point start = Clock::now();
    size_t copied = 0;
    while (Clock::now() - start < std::chrono::milliseconds(o.windowMs)) {
      std::memcpy(to.data(), from.data(), bytes);
      from[copied % bytes] = to[bytes - 1 - copied % bytes];  // keep the copy observable
      copied += bytes;
    }
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    rates.push_back(static_cast<double>(copied) / elapsed / 1e9);
    std::printf("%.2f ", rates.back());
    std::fflush(stdout);
  }
  std::sort(rates.begin(), rates.end());
  double lo = rates.front();
  double hi = rates.back();
  std::printf(
      "\nGB/s over %zu windows of %d ms, %zu MiB: min %.2f median %.2f max %.2f (max/min %.2f)\n",
      rates.size(), o.windowMs, o.mib, lo, rates[rates.size() / 2], hi, hi / lo);
  return 0;
}
