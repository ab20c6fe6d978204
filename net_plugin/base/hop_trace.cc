#include "net_plugin/base/hop_trace.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>

#include "net_plugin/base/log.h"
#include "net_plugin/base/steady_ns.h"

namespace bagua::net::hoptrace {

std::atomic<bool> gOn{false};

namespace {

constexpr size_t kCapacity = size_t{1} << 20;

struct Record {
  int64_t ns;
  uint64_t seq;
  uint64_t size;
  int64_t extra;
  uint32_t conn;
  int32_t tid;
  Event event;
};

struct Trace {
  std::string dir;
  // Zeroed: a slot reserved but not yet written when write() runs (a
  // worker recording at exit) has event 0 and is skipped.
  std::unique_ptr<Record[]> records{new Record[kCapacity]()};
  std::atomic<size_t> next{0};

  std::string write() {
    if (written.exchange(true)) return "";
    gOn.store(false, std::memory_order_relaxed);
    char host[256] = "host";
    gethostname(host, sizeof(host) - 1);
    std::string path = dir + "/bagua-net-trace." + host + "." + std::to_string(getpid()) + "." +
                       std::to_string(steadyNs()) + ".tsv";
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) {
      BAGUA_WARN("BAGUA_NET_TRACE: cannot write %s", path.c_str());
      return "";
    }
    size_t n = std::min(next.load(), kCapacity);
    std::fprintf(f, "# ns\tevent\tconn\tseq\tsize\textra\ttid\t(dropped %zu)\n",
                 next.load() - n);
    for (size_t i = 0; i < n; ++i) {
      const Record& r = records[i];
      if (r.event == Event{}) continue;
      std::fprintf(f, "%lld\t%c\t%u\t%llu\t%llu\t%lld\t%d\n", static_cast<long long>(r.ns),
                   static_cast<char>(r.event), r.conn, static_cast<unsigned long long>(r.seq),
                   static_cast<unsigned long long>(r.size), static_cast<long long>(r.extra),
                   r.tid);
    }
    // A full disk or a closed mount: say so, rather than leave a short file.
    bool failed = std::ferror(f) != 0;
    if (std::fclose(f) != 0 || failed) {
      BAGUA_WARN("BAGUA_NET_TRACE: writing %s failed (%zu events): the file is incomplete",
                 path.c_str(), n);
      return "";
    }
    return path;
  }

  std::atomic<bool> written{false};
};

// Never freed: a worker may record while the process exits.
Trace* trace = nullptr;

// Writes the trace at unload or exit.
struct Writer {
  ~Writer() {
    if (trace != nullptr) trace->write();
  }
} writer;

}  // namespace

void start(const std::string& dir) {
  static std::once_flag once;
  if (dir.empty()) return;
  std::call_once(once, [&] {
    trace = new Trace();
    trace->dir = dir;
    gOn.store(true, std::memory_order_release);
    BAGUA_INFO(NCCL_NET, "BAGUA_NET_TRACE: recording message events into %s", dir.c_str());
  });
}

std::string flush() { return trace == nullptr ? "" : trace->write(); }

void record(Event event, uint32_t conn, uint64_t seq, uint64_t size, int64_t extra,
            int64_t ns) {
  if (!gOn.load(std::memory_order_acquire)) return;  // then `trace` is set
  thread_local int32_t tid = static_cast<int32_t>(gettid());
  size_t i = trace->next.fetch_add(1, std::memory_order_relaxed);
  if (i >= kCapacity) return;
  trace->records[i] = Record{ns != 0 ? ns : steadyNs(), seq, size, extra, conn, tid, event};
}

namespace {

uint32_t portOf(int fd, bool local) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  int rc = local ? getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                 : getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return 0;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return 0;
}

}  // namespace

uint32_t connectionId(int fd, bool sender) {
  uint32_t senderPort = portOf(fd, sender);
  uint32_t receiverPort = portOf(fd, !sender);
  return senderPort << 16 | receiverPort;
}

}  // namespace bagua::net::hoptrace
