// Test helpers: links, request polling, patterns, log capture.
#include "tests/net_plugin/support/harness.h"

#include <gtest/gtest.h>

#include <sys/socket.h>

#include <cstdarg>
#include <cstring>
#include <mutex>
#include <thread>

#include "net_plugin/api/api.h"
#include "net_plugin/transport/wire.h"

namespace bagua::net::testing {
namespace {

std::mutex gLogMutex;
std::vector<std::string> gLog;

}  // namespace

Link connectLink(int dev, void* ctx) {
  Link link;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  EXPECT_EQ(api::listen(dev, handle, &link.listenComm), ncclSuccess);
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while ((link.sendComm == nullptr || link.recvComm == nullptr) &&
         std::chrono::steady_clock::now() < deadline) {
    if (link.sendComm == nullptr) {
      if (api::connect(ctx, dev, handle, &link.sendComm) != ncclSuccess) break;
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

ncclResult_t waitPair(void* send, void* recv, int* sent, int* received,
                      std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  void* requests[2] = {send, recv};
  int* sizes[2] = {sent, received};
  while (std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 2; ++i) {
      if (requests[i] == nullptr) continue;
      int done = 0;
      int bytes = -1;
      ncclResult_t rc = api::test(requests[i], &done, &bytes);
      if (rc != ncclSuccess) return rc;
      if (done) {
        if (sizes[i] != nullptr) *sizes[i] = bytes;
        requests[i] = nullptr;  // released by test(): never test it again
      }
    }
    if (requests[0] == nullptr && requests[1] == nullptr) return ncclSuccess;
  }
  ADD_FAILURE() << "send " << send << " and receive " << recv << " did not both finish within "
                << timeout.count() << " ms";
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

int rawConnect(const char* handle) {
  ListenHandle h;
  std::memcpy(&h, handle, sizeof(h));
  int fd = ::socket(h.addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::connect(fd, &h.addr.sa, sockAddrLen(h.addr)), 0);
  return fd;
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

}  // namespace bagua::net::testing
