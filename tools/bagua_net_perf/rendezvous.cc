// See rendezvous.h. Polling with a short, growing sleep: ranks of a run
// arrive within milliseconds of each other, and a file system gives no
// portable way to wait for another process's file (NFS has no inotify).
#include "tools/bagua_net_perf/rendezvous.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "tools/plugin_driver/errors.h"

namespace bagua::net_perf {

using plugin_driver::TimeoutError;

namespace {

using Clock = std::chrono::steady_clock;

// Sleeps a little longer each time: 20 us doubling up to 2 ms.
class Backoff {
 public:
  void pause() {
    std::this_thread::sleep_for(std::chrono::microseconds(us_));
    us_ = us_ < 2000 ? us_ * 2 : 2000;
  }

 private:
  int us_ = 20;
};

}  // namespace

FileStore::FileStore(std::string dir, std::chrono::seconds timeout)
    : dir_(std::move(dir)), timeout_(timeout) {}

std::string FileStore::path(const std::string& key) const { return dir_ + "/" + key; }

void FileStore::put(const std::string& key, const std::string& value) const {
  static int counter = 0;
  std::string tmp =
      path("." + key + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(value.data(), static_cast<std::streamsize>(value.size()));
    out.close();
    if (!out) TOOL_THROW(ToolError, "cannot write " + tmp);
  }
  TOOL_SYSCALL(rename(tmp.c_str(), path(key).c_str()), "rename to " + path(key));
}

bool FileStore::has(const std::string& key) const {
  struct stat st;
  return stat(path(key).c_str(), &st) == 0;
}

double FileStore::writtenAt(const std::string& key) const {
  struct stat st;
  if (stat(path(key).c_str(), &st) != 0) return -1;
  return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) * 1e-9;
}

std::string FileStore::get(const std::string& key, int owner, const std::string& what) const {
  auto deadline = Clock::now() + timeout_;
  Backoff backoff;
  while (!has(key)) {
    if (Clock::now() > deadline) {
      std::ostringstream msg;
      msg << "timed out after " << timeout_.count() << " s waiting for rank " << owner << "'s "
          << what << " (" << path(key) << " missing): is rank " << owner << " running and alive?";
      throw TimeoutError(msg.str());
    }
    backoff.pause();
  }
  std::ifstream in(path(key), std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

void FileStore::barrier(const std::string& name, int rank, int world) const {
  put("barrier." + name + "." + std::to_string(rank), "");
  auto deadline = Clock::now() + timeout_;
  Backoff backoff;
  for (int r = 0; r < world; ++r) {
    while (!has("barrier." + name + "." + std::to_string(r))) {
      if (Clock::now() > deadline) {
        std::string missing;
        for (int m = r; m < world; ++m) {
          if (!has("barrier." + name + "." + std::to_string(m))) {
            missing += (missing.empty() ? "" : ", ") + std::to_string(m);
          }
        }
        std::ostringstream msg;
        msg << "timed out after " << timeout_.count() << " s at barrier '" << name
            << "' waiting for rank(s) " << missing << " (store " << dir_ << ")";
        throw TimeoutError(msg.str());
      }
      backoff.pause();
    }
  }
}

}  // namespace bagua::net_perf
