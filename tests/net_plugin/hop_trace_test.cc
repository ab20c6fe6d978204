// BAGUA_NET_TRACE's records (hop_trace.h): over a loopback link, every
// message has its isend, its posted receive, its arrival and both ends' test(),
// under one connection id at both ends and in the order they happened;
// bench/gpu/hop_trace.py reads these rows.
#include "net_plugin/base/hop_trace.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/net_plugin/support/harness.h"

namespace bagua::net::testing {
namespace {

struct Row {
  long long ns;
  char event;
  unsigned conn;
  unsigned long long seq;
  unsigned long long size;
  long long extra;
};

std::vector<Row> readRows(const std::string& path) {
  std::ifstream in(path);
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Row r{};
    int tid = 0;
    fields >> r.ns >> r.event >> r.conn >> r.seq >> r.size >> r.extra >> tid;
    rows.push_back(r);
  }
  return rows;
}

TEST(HopTrace, EveryMessageHasItsEventsUnderOneConnectionInOrder) {
  char dir[] = "/tmp/hop_trace_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  hoptrace::start(dir);
  ASSERT_TRUE(hoptrace::on());
  Link link = connectLink();
  constexpr int kMessages = 20;
  const std::vector<size_t> sizes = {8, 64, 4096, 1 << 20};
  for (int i = 0; i < kMessages; ++i) {
    size_t size = sizes[static_cast<size_t>(i) % sizes.size()];
    std::vector<uint8_t> out(size, static_cast<uint8_t>(i));
    std::vector<uint8_t> in(size);
    void* rreq = postRecv(link.recvComm, in.data(), in.size());
    void* sreq = postSend(link.sendComm, out.data(), size);
    ASSERT_EQ(waitPair(sreq, rreq), ncclSuccess);
    ASSERT_EQ(in, out);
  }
  std::string path = hoptrace::flush();
  closeLink(link);
  ASSERT_FALSE(path.empty());
  EXPECT_FALSE(hoptrace::on()) << "flush() ends the recording";
  EXPECT_EQ(hoptrace::flush(), "") << "a second flush writes nothing";

  std::vector<Row> rows;
  for (const Row& r : readRows(path)) {
    if (r.event != 'o') rows.push_back(r);  // the caller engine's polls: no message's
  }
  std::set<unsigned> conns;
  for (const Row& r : rows) conns.insert(r.conn);
  ASSERT_EQ(conns.size(), 1u) << "both ends name the connection alike";
  EXPECT_NE(*conns.begin(), 0u);
  // Per message: isend, post, the last arrival, and the two done rows.
  std::map<unsigned long long, std::map<char, std::vector<Row>>> byMessage;
  for (const Row& r : rows) byMessage[r.seq][r.event].push_back(r);
  ASSERT_EQ(byMessage.size(), static_cast<size_t>(kMessages));
  for (auto& [seq, events] : byMessage) {
    size_t size = sizes[seq % sizes.size()];
    ASSERT_EQ(events['s'].size(), 1u) << "message " << seq;
    ASSERT_EQ(events['p'].size(), 1u) << "message " << seq;
    ASSERT_EQ(events['d'].size(), 1u) << "message " << seq << ": the receive's test()";
    ASSERT_EQ(events['e'].size(), 1u) << "message " << seq << ": the send's test()";
    ASSERT_FALSE(events['a'].empty()) << "message " << seq;
    EXPECT_EQ(events['s'][0].size, size);
    unsigned long long arrived = 0;
    long long lastArrival = 0;
    for (const Row& a : events['a']) {
      arrived += a.size;
      lastArrival = std::max(lastArrival, a.ns);
      EXPECT_GE(a.ns, events['s'][0].ns) << "message " << seq << " arrived before its isend";
    }
    EXPECT_EQ(arrived, size) << "message " << seq;
    EXPECT_GE(events['d'][0].ns, lastArrival) << "message " << seq;
    EXPECT_GE(events['d'][0].extra, 1) << "test() calls of message " << seq;
    EXPECT_GE(events['e'][0].extra, 1) << "test() calls of message " << seq;
  }
  std::remove(path.c_str());
  rmdir(dir);
}

// A directory that cannot be written (gone, read-only, full): the trace is a
// warning naming the file, and the connection is unharmed. (Recording starts
// once per process: tests/meson.build runs each test of this file alone.)
TEST(HopTraceFaults, AnUnwritableDirectoryIsAWarningNotAFailure) {
  hoptrace::start("/nonexistent/bagua-hop-trace");
  Link link = connectLink();
  uint64_t out = 42;
  uint64_t in = 0;
  void* rreq = postRecv(link.recvComm, &in, sizeof(in));
  void* sreq = postSend(link.sendComm, &out, sizeof(out));
  ASSERT_EQ(waitPair(sreq, rreq), ncclSuccess);
  EXPECT_EQ(in, 42u);
  clearCapturedLog();
  EXPECT_EQ(hoptrace::flush(), "");
  EXPECT_TRUE(logContains("BAGUA_NET_TRACE: cannot write /nonexistent/bagua-hop-trace/"));
  closeLink(link);
}

}  // namespace
}  // namespace bagua::net::testing
