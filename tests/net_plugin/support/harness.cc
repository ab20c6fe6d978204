// Test helpers: links, request polling, patterns, log capture.
#include "tests/net_plugin/support/harness.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdarg>
#include <cstring>
#include <mutex>
#include <thread>

#include "net_plugin/api/api.h"

namespace bagua::net::testing {
namespace {

std::mutex gLogMutex;
std::vector<std::string> gLog;

int countEntries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

}  // namespace

Link connectLink(int dev) {
  Link link;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  EXPECT_EQ(api::listen(dev, handle, &link.listenComm), ncclSuccess);
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while ((link.sendComm == nullptr || link.recvComm == nullptr) &&
         std::chrono::steady_clock::now() < deadline) {
    if (link.sendComm == nullptr) {
      if (api::connect(dev, handle, &link.sendComm) != ncclSuccess) break;
    }
    if (link.recvComm == nullptr) {
      if (api::accept(link.listenComm, &link.recvComm) != ncclSuccess) break;
    }
  }
  EXPECT_NE(link.sendComm, nullptr);
  EXPECT_NE(link.recvComm, nullptr);
  return link;
}

void closeLink(Link& link) {
  if (link.sendComm != nullptr) {
    EXPECT_EQ(api::closeSend(link.sendComm), ncclSuccess);
  }
  if (link.recvComm != nullptr) {
    EXPECT_EQ(api::closeRecv(link.recvComm), ncclSuccess);
  }
  if (link.listenComm != nullptr) {
    EXPECT_EQ(api::closeListen(link.listenComm), ncclSuccess);
  }
  link = Link{};
}

ncclResult_t waitRequest(void* request, int* size, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int done = 0;
  int bytes = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    ncclResult_t rc = api::test(request, &done, &bytes);
    if (rc != ncclSuccess) return rc;
    if (done) {
      if (size != nullptr) *size = bytes;
      return ncclSuccess;
    }
  }
  ADD_FAILURE() << "request " << request << " did not finish within " << timeout.count() << " ms";
  return ncclInternalError;
}

ncclResult_t waitForError(void* request, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int done = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    ncclResult_t rc = api::test(request, &done, nullptr);
    if (rc != ncclSuccess) return rc;
    if (done) return ncclSuccess;
    std::this_thread::sleep_for(1ms);
  }
  return ncclInternalError;
}

void* postSend(void* sendComm, const void* data, size_t size, void* mhandle) {
  void* request = nullptr;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (request == nullptr && std::chrono::steady_clock::now() < deadline) {
    ncclResult_t rc = api::isend(sendComm, const_cast<void*>(data), size, mhandle, &request);
    if (rc != ncclSuccess) {
      ADD_FAILURE() << "isend returned " << rc;
      return nullptr;
    }
  }
  EXPECT_NE(request, nullptr);
  return request;
}

void* postRecv(void* recvComm, void* data, size_t size, void* mhandle) {
  void* request = nullptr;
  void* mhandles[1] = {mhandle};
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (request == nullptr && std::chrono::steady_clock::now() < deadline) {
    ncclResult_t rc = api::irecv(recvComm, 1, &data, &size, mhandles, &request);
    if (rc != ncclSuccess) {
      ADD_FAILURE() << "irecv returned " << rc;
      return nullptr;
    }
  }
  EXPECT_NE(request, nullptr);
  return request;
}

void fillPattern(uint8_t* data, size_t size, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < size; ++i) {
    if ((i & 7) == 0) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    data[i] = static_cast<uint8_t>(x >> ((i & 7) * 8));
  }
}

long long verifyPattern(const uint8_t* data, size_t size, uint64_t seed) {
  std::vector<uint8_t> want(size);
  fillPattern(want.data(), size, seed);
  if (std::memcmp(want.data(), data, size) == 0) return -1;
  for (size_t i = 0; i < size; ++i) {
    if (want[i] != data[i]) return static_cast<long long>(i);
  }
  return -1;
}

void captureLogger(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  char text[2048];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);
  if (level == NCCL_LOG_WARN || std::getenv("BAGUA_TEST_VERBOSE") != nullptr) {
    fprintf(stderr, "[plugin %s] %s\n", level == NCCL_LOG_WARN ? "WARN" : "INFO", text);
  }
  std::lock_guard<std::mutex> lock(gLogMutex);
  gLog.emplace_back(text);
}

std::vector<std::string> capturedLog() {
  std::lock_guard<std::mutex> lock(gLogMutex);
  return gLog;
}

void clearCapturedLog() {
  std::lock_guard<std::mutex> lock(gLogMutex);
  gLog.clear();
}

bool logContains(const std::string& needle) {
  std::lock_guard<std::mutex> lock(gLogMutex);
  for (const std::string& line : gLog) {
    if (line.find(needle) != std::string::npos) return true;
  }
  return false;
}

int threadCount() { return countEntries("/proc/self/task"); }
int openFdCount() { return countEntries("/proc/self/fd"); }

}  // namespace bagua::net::testing
