// Verifiable data patterns and /proc counters.
#include "tests/net_plugin/support/patterns.h"

#include <dirent.h>
#include <sched.h>

#include <cstdlib>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace bagua::net::testing {
namespace {

int countEntries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

}  // namespace

namespace {

// xorshift64 stream, 8 bytes per step; `x` carries the state across blocks.
void generate(uint8_t* out, size_t size, uint64_t* x) {
  for (size_t i = 0; i < size; ++i) {
    if ((i & 7) == 0) {
      *x ^= *x << 13;
      *x ^= *x >> 7;
      *x ^= *x << 17;
    }
    out[i] = static_cast<uint8_t>(*x >> ((i & 7) * 8));
  }
}

uint64_t seedState(uint64_t seed) { return seed * 0x9e3779b97f4a7c15ull + 1; }

}  // namespace

void fillPattern(uint8_t* data, size_t size, uint64_t seed) {
  uint64_t x = seedState(seed);
  generate(data, size, &x);
}

long long verifyPattern(const uint8_t* data, size_t size, uint64_t seed) {
  constexpr size_t kBlock = 1 << 16;  // a multiple of 8 keeps the stream aligned
  uint64_t x = seedState(seed);
  std::vector<uint8_t> want(kBlock);
  for (size_t done = 0; done < size; done += kBlock) {
    size_t n = size - done < kBlock ? size - done : kBlock;
    generate(want.data(), n, &x);
    if (std::memcmp(want.data(), data + done, n) != 0) {
      for (size_t i = 0; i < n; ++i) {
        if (want[i] != data[done + i]) return static_cast<long long>(done + i);
      }
    }
  }
  return -1;
}

namespace {

// /proc/self/task/TID of each of the plugin's threads (named "bagua-net-*");
// false when /proc cannot be read.
bool pluginTasks(std::vector<std::string>* tasks) {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string task = std::string("/proc/self/task/") + e->d_name;
    std::ifstream comm(task + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("bagua-net", 0) == 0) tasks->push_back(task);
  }
  closedir(d);
  return true;
}

}  // namespace

int pluginThreadCount() {
  std::vector<std::string> tasks;
  return pluginTasks(&tasks) ? static_cast<int>(tasks.size()) : -1;
}

uint64_t pluginThreadsCpuNs() {
  std::vector<std::string> tasks;
  pluginTasks(&tasks);
  uint64_t total = 0;
  for (const std::string& task : tasks) {
    std::ifstream schedstat(task + "/schedstat");
    uint64_t ns = 0;
    if (schedstat >> ns) total += ns;
  }
  return total;
}

int pinPluginThreads(int cpu) {
  std::vector<std::string> tasks;
  if (!pluginTasks(&tasks)) return -1;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  for (const std::string& task : tasks) {
    pid_t tid = static_cast<pid_t>(std::atoi(task.c_str() + task.rfind('/') + 1));
    if (sched_setaffinity(tid, sizeof(set), &set) != 0) return -1;
  }
  return static_cast<int>(tasks.size());
}

int pluginThreadCountSettled(int want) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int n = pluginThreadCount();
  while (n > want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    n = pluginThreadCount();
  }
  return n;
}

int openFdCount() { return countEntries("/proc/self/fd"); }

}  // namespace bagua::net::testing
