// abi_client: one connection through an NCCL net plugin, driven the way
// NCCL's proxy thread drives it, written independently of bagua-net-perf (no
// shared code) so the two can check each other. One process per side:
//
//   abi_client --role recv --dir D --size S [options] &   # prints the rate
//   abi_client --role send --dir D --size S [options]
//
// The receiver listens and writes the 128-byte handle (plugin) or the port
// (--tcp) to D; the sender waits for it and connects. Each side keeps
// --depth requests in flight (default 4, as NCCL's NCCL_STEPS/2 slices of a
// channel's buffer), reposting as the oldest completes, and polls test() on
// the oldest: --poll spin calls it again at once (the proxy thread while it
// has work), --poll yield calls sched_yield() between polls (the idle proxy).
// --tcp is the baseline: one blocking TCP socket, send()/recv(MSG_WAITALL)
// of whole messages, all in one buffer, or cycling over --tcp-slots N
// buffers (N = --depth: the plugin side's working set, as an application
// that moves different buffers has; one buffer of 1 MiB stays in a core's
// L2 and makes the copies cheaper). The receiver times messages --warmup+1 ..
// --warmup+--iters and prints one line: "recv SIZE GB/s RATE cpu_s_per_GB C".
//
// Options: --plugin PATH (default libnccl-net-bagua.so), --abi 11|12
// (default 12), --iters N (default 50), --warmup W (default 10),
// --tcp-slots N (default 1), --timeout S (default 60).
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "net_plugin/nccl/net_v12.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string role;
  std::string dir;
  std::string plugin = "libnccl-net-bagua.so";
  size_t size = 4u << 20;
  int iters = 50;
  int warmup = 10;
  int depth = 4;
  int tcpSlots = 1;
  int abi = 12;
  bool spin = true;
  bool tcp = false;
  double timeoutS = 60;
};

[[noreturn]] void die(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::fprintf(stderr, "abi_client: ");
  std::vfprintf(stderr, fmt, args);
  std::fprintf(stderr, "\n");
  va_end(args);
  std::exit(1);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--tcp") {
      o.tcp = true;
      continue;
    }
    if (i + 1 >= argc) die("missing value after %s", flag.c_str());
    std::string value = argv[++i];
    if (flag == "--role") {
      o.role = value;
    } else if (flag == "--dir") {
      o.dir = value;
    } else if (flag == "--plugin") {
      o.plugin = value;
    } else if (flag == "--size") {
      o.size = std::strtoull(value.c_str(), nullptr, 10);
    } else if (flag == "--iters") {
      o.iters = std::atoi(value.c_str());
    } else if (flag == "--warmup") {
      o.warmup = std::atoi(value.c_str());
    } else if (flag == "--depth") {
      o.depth = std::atoi(value.c_str());
    } else if (flag == "--tcp-slots") {
      o.tcpSlots = std::atoi(value.c_str());
    } else if (flag == "--abi") {
      o.abi = std::atoi(value.c_str());
    } else if (flag == "--poll") {
      if (value != "spin" && value != "yield")
        die("--poll takes spin or yield, not %s", value.c_str());
      o.spin = value == "spin";
    } else if (flag == "--timeout") {
      o.timeoutS = std::atof(value.c_str());
    } else {
      die("unknown option %s", flag.c_str());
    }
  }
  if ((o.role != "send" && o.role != "recv") || o.dir.empty()) die("--role send|recv and --dir D");
  if (o.size == 0 || o.iters < 1 || o.warmup < 0 || o.depth < 1 || o.depth > 32 ||
      o.tcpSlots < 1 || o.tcpSlots > 32) {
    die("bad --size, --iters, --warmup, --depth or --tcp-slots");
  }
  if (o.abi != 11 && o.abi != 12) die("--abi takes 11 or 12");
  return o;
}

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

// Writes `bytes` to DIR/NAME atomically (a rename), for the other side.
void publish(const Options& o, const char* name, const void* bytes, size_t n) {
  std::string tmp = o.dir + "/" + name + ".tmp";
  std::ofstream(tmp, std::ios::binary).write(static_cast<const char*>(bytes), n);
  if (std::rename(tmp.c_str(), (o.dir + "/" + name).c_str()) != 0) die("rename %s", tmp.c_str());
}

// Waits for DIR/NAME and reads n bytes of it.
void await(const Options& o, const char* name, void* bytes, size_t n) {
  auto deadline = Clock::now() + std::chrono::duration<double>(o.timeoutS);
  std::string path = o.dir + "/" + name;
  while (true) {
    std::ifstream in(path, std::ios::binary);
    if (in && in.read(static_cast<char*>(bytes), n)) return;
    if (Clock::now() > deadline) die("no %s after %.0f s", path.c_str(), o.timeoutS);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Prints the receiver's line from the times message `warmup` and
// `warmup + iters` completed.
void report(const Options& o, Clock::time_point t0, Clock::time_point t1, double cpu) {
  double seconds = std::chrono::duration<double>(t1 - t0).count();
  double bytes = static_cast<double>(o.size) * o.iters;
  std::printf("recv %zu GB/s %.4f cpu_s_per_GB %.4f\n", o.size, bytes / seconds / 1e9,
              cpu / (bytes / 1e9));
}

// ---- the plugin, through its v11 or v12 table -------------------------------

void logNothing(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  if (level != NCCL_LOG_WARN) return;
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  std::fprintf(stderr, "\n");
  va_end(args);
}

#define CHECK_NCCL(call)                                                           \
  do {                                                                             \
    ncclResult_t rc_ = (call);                                                     \
    if (rc_ != ncclSuccess) die("%s returned %d (line %d)", #call, rc_, __LINE__); \
  } while (0)

// v11 and v12 share every entry this client calls but getProperties.
template <typename Table>
int runPlugin(const Options& o, const Table* net) {
  void* ctx = nullptr;
  ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
  CHECK_NCCL(net->init(&ctx, 1, &config, logNothing, nullptr));
  const bool recv = o.role == "recv";
  void* comm = nullptr;
  void* listenComm = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ncclNetDeviceHandle_t* devHandle = nullptr;
  auto deadline = Clock::now() + std::chrono::duration<double>(o.timeoutS);
  if (recv) {
    CHECK_NCCL(net->listen(ctx, 0, handle, &listenComm));
    publish(o, "handle", handle, sizeof(handle));
    while (comm == nullptr) {
      CHECK_NCCL(net->accept(listenComm, &comm, &devHandle));
      if (Clock::now() > deadline) die("accept timed out");
    }
  } else {
    await(o, "handle", handle, sizeof(handle));
    while (comm == nullptr) {
      CHECK_NCCL(net->connect(ctx, 0, handle, &comm, &devHandle));
      if (Clock::now() > deadline) die("connect timed out");
    }
  }
  std::vector<char> buffer(o.size * static_cast<size_t>(o.depth), 1);
  void* mr = nullptr;
  CHECK_NCCL(net->regMr(comm, buffer.data(), buffer.size(), NCCL_PTR_HOST, &mr));

  const int total = o.warmup + o.iters;
  std::vector<void*> requests(static_cast<size_t>(o.depth), nullptr);
  int posted = 0;
  int done = 0;
  Clock::time_point t0 = Clock::now();
  double cpu0 = cpuSeconds();
  deadline = Clock::now() + std::chrono::duration<double>(o.timeoutS);
  while (done < total) {
    // Post up to depth ahead of the oldest unfinished, as NCCL does per slice.
    while (posted < total && posted < done + o.depth) {
      void* data = buffer.data() + (posted % o.depth) * o.size;
      void* request = nullptr;
      if (recv) {
        size_t size = o.size;
        int tag = 0;
        void* phandle = nullptr;
        CHECK_NCCL(net->irecv(comm, 1, &data, &size, &tag, &mr, &phandle, &request));
      } else {
        CHECK_NCCL(net->isend(comm, data, o.size, 0, mr, nullptr, &request));
      }
      if (request == nullptr) break;
      requests[posted % o.depth] = request;
      ++posted;
    }
    int finished = 0;
    int bytes = 0;
    CHECK_NCCL(net->test(requests[done % o.depth], &finished, &bytes));
    if (finished) {
      if (recv && static_cast<size_t>(bytes) != o.size)
        die("received %d B, not %zu", bytes, o.size);
      if (++done == o.warmup) {
        t0 = Clock::now();
        cpu0 = cpuSeconds();
      }
    } else {
      if (!o.spin) sched_yield();
      if (Clock::now() > deadline) die("message %d not done in time", done);
    }
  }
  // The sender closes only after the receiver has everything: the plugin
  // fails a receive whose peer closed (NCCL closes after its last collective).
  if (recv) {
    report(o, t0, Clock::now(), cpuSeconds() - cpu0);
    char one = 1;
    publish(o, "done", &one, 1);
  } else {
    char one = 0;
    await(o, "done", &one, 1);
  }
  CHECK_NCCL(net->deregMr(comm, mr));
  CHECK_NCCL(recv ? net->closeRecv(comm) : net->closeSend(comm));
  if (listenComm != nullptr) CHECK_NCCL(net->closeListen(listenComm));
  CHECK_NCCL(net->finalize(ctx));
  return 0;
}

int plugin(const Options& o) {
  void* lib = dlopen(o.plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) die("dlopen: %s", dlerror());
  std::string symbol = "ncclNetPlugin_v" + std::to_string(o.abi);
  void* table = dlsym(lib, symbol.c_str());
  if (table == nullptr) die("%s does not export %s", o.plugin.c_str(), symbol.c_str());
  if (o.abi == 12) return runPlugin(o, static_cast<const ncclNet_v12_t*>(table));
  return runPlugin(o, static_cast<const ncclNet_v11_t*>(table));
}

// ---- the baseline: one blocking TCP socket ----------------------------------

int tcp(const Options& o) {
  std::vector<char> buffer(o.size * static_cast<size_t>(o.tcpSlots), 1);
  auto slot = [&](int i) { return buffer.data() + static_cast<size_t>(i % o.tcpSlots) * o.size; };
  const int total = o.warmup + o.iters;
  int fd = -1;
  if (o.role == "recv") {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listener, 1) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      die("listen: %s", strerror(errno));
    }
    publish(o, "port", &addr.sin_port, sizeof(addr.sin_port));
    fd = accept(listener, nullptr, nullptr);
    close(listener);
    if (fd < 0) die("accept: %s", strerror(errno));
    Clock::time_point t0 = Clock::now();
    double cpu0 = cpuSeconds();
    for (int i = 0; i < total; ++i) {
      if (i == o.warmup) {
        t0 = Clock::now();
        cpu0 = cpuSeconds();
      }
      if (recv(fd, slot(i), o.size, MSG_WAITALL) != static_cast<ssize_t>(o.size)) {
        die("recv: %s", strerror(errno));
      }
    }
    report(o, t0, Clock::now(), cpuSeconds() - cpu0);
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    await(o, "port", &addr.sin_port, sizeof(addr.sin_port));
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      die("connect: %s", strerror(errno));
    }
    for (int i = 0; i < total; ++i) {
      size_t sent = 0;
      while (sent < o.size) {
        ssize_t n = send(fd, slot(i) + sent, o.size - sent, MSG_NOSIGNAL);
        if (n <= 0) die("send: %s", strerror(errno));
        sent += static_cast<size_t>(n);
      }
    }
  }
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  return o.tcp ? tcp(o) : plugin(o);
}
