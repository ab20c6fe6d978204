// Test helpers over the plugin's API layer (bagua::net::api), which is what
// every versioned ABI table forwards to: in-process links (listen + connect +
// accept driven alternately, as NCCL's proxy threads would), request polling
// with a deadline, and verifiable data patterns.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "net_plugin/nccl/net_types.h"
#include "tests/net_plugin/support/patterns.h"

namespace bagua::net::testing {

using namespace std::chrono_literals;

// One connection: a listener, its accepted receive comm and the send comm.
struct Link {
  void* listenComm = nullptr;
  void* sendComm = nullptr;
  void* recvComm = nullptr;
};

// Builds a link to ourselves on device `dev`, connecting with v11 context
// `ctx` (NULL as for older ABIs); fails the test on error.
Link connectLink(int dev = 0, void* ctx = nullptr);
// Closes all three comms (NULL ones are skipped); expects success.
void closeLink(Link& link);

// A raw TCP connection to the listener named by `handle` (a listen()
// handle), for tests that speak, or mangle, the wire protocol themselves.
int rawConnect(const char* handle);

// Polls test() until the request finishes or fails. Returns test()'s result
// (ncclInternalError, with a test failure, when `timeout` passes first).
ncclResult_t waitRequest(void* request, int* size = nullptr,
                         std::chrono::milliseconds timeout = 60s);

// Polls test() of a send and a receive in turn until both finish, as NCCL's
// proxy does (a caller stream moves only while its receiver tests), and
// returns the first error; *sent / *received get the sizes test() reported.
ncclResult_t waitPair(void* send, void* recv, int* sent = nullptr, int* received = nullptr,
                      std::chrono::milliseconds timeout = 60s);

// Like waitRequest, but expects an error: returns it, or ncclSuccess (with
// no test failure) if the request finished instead; ncclInternalError if
// neither happened within `timeout`.
ncclResult_t waitForError(void* request, std::chrono::milliseconds timeout);

// Posts isend/irecv, retrying while the plugin returns a NULL request.
void* postSend(void* sendComm, const void* data, size_t size, void* mhandle = nullptr);
void* postRecv(void* recvComm, void* data, size_t size, void* mhandle = nullptr);

// Log lines the plugin wrote (WARN and INFO) since the last clear.
std::vector<std::string> capturedLog();
void clearCapturedLog();
bool logContains(const std::string& needle);
// The logger test mains install into the plugin.
void captureLogger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...);

}  // namespace bagua::net::testing
