// RespArrayReader on bytes written into a socketpair by the test: values
// whole and split across reads, nils, empty values, values larger than the
// buffer, server errors, malformed replies, a closed peer and a timeout.
#include "runtime/data/resp_array_reader.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "posix/fd.h"

namespace bagua {
namespace {

using Status = RespArrayReader::Status;

ValuePool& testPool() {
  static std::shared_ptr<ValuePool> pool = ValuePool::create(1 << 20);
  return *pool;
}

struct Pair {
  posix::Fd ours, theirs;
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    ours = posix::Fd(fds[0]);
    theirs = posix::Fd(fds[1]);
    timeval tv{0, 200000};
    ::setsockopt(ours.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  void send(const std::string& bytes) {
    ASSERT_EQ(::write(theirs.get(), bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }
};

std::string text(const std::optional<RespArrayReader::Value>& v) {
  return v ? std::string(v->bytes.get(), v->size) : "<nil>";
}

TEST(RespArrayReader, ReadsValuesNilsAndEmptyValues) {
  Pair p;
  p.send("*4\r\n$3\r\nabc\r\n$-1\r\n$0\r\n\r\n$5\r\na\r\nbc\r\n");
  ValuePool& pool = testPool();
  RespArrayReader reader(16);  // smaller than the reply: lines and values cross reads
  std::vector<std::optional<RespArrayReader::Value>> values;
  std::string error;
  ASSERT_EQ(reader.read(p.ours.get(), 4, pool, values, error), Status::kOk) << error;
  EXPECT_EQ(text(values[0]), "abc");
  EXPECT_EQ(text(values[1]), "<nil>");
  EXPECT_EQ(text(values[2]), "");
  EXPECT_EQ(text(values[3]), "a\r\nbc");  // binary: CRLF inside a value
}

TEST(RespArrayReader, ALargeValueArrivingInPiecesIsReadWhole) {
  Pair p;
  std::string big(300000, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31);
  std::thread writer([&] {
    std::string reply = "*2\r\n$" + std::to_string(big.size()) + "\r\n" + big + "\r\n$1\r\nz\r\n";
    for (size_t at = 0; at < reply.size(); at += 7777) p.send(reply.substr(at, 7777));
  });
  ValuePool& pool = testPool();
  RespArrayReader reader(4096);
  std::vector<std::optional<RespArrayReader::Value>> values;
  std::string error;
  EXPECT_EQ(reader.read(p.ours.get(), 2, pool, values, error), Status::kOk) << error;
  writer.join();
  EXPECT_EQ(text(values[0]), big);
  EXPECT_EQ(text(values[1]), "z");
}

TEST(RespArrayReader, ServerErrorsAndMalformedRepliesAreNamed) {
  std::vector<std::optional<RespArrayReader::Value>> values;
  std::string error;
  {
    Pair p;
    p.send("-ERR out of memory\r\n");
    ValuePool& pool = testPool();
    RespArrayReader reader(64);
    EXPECT_EQ(reader.read(p.ours.get(), 1, pool, values, error), Status::kServerError);
    EXPECT_EQ(error, "ERR out of memory");
  }
  {
    Pair p;
    p.send("*3\r\n");
    ValuePool& pool = testPool();
    RespArrayReader reader(64);
    EXPECT_EQ(reader.read(p.ours.get(), 2, pool, values, error), Status::kProtocolError);
    EXPECT_NE(error.find("array of 2"), std::string::npos) << error;
  }
  {
    Pair p;
    p.send("*1\r\n$3\r\nabcXY");
    ValuePool& pool = testPool();
    RespArrayReader reader(64);
    EXPECT_EQ(reader.read(p.ours.get(), 1, pool, values, error), Status::kProtocolError);
    EXPECT_NE(error.find("CRLF"), std::string::npos) << error;
  }
  {
    Pair p;
    p.send("*1\r\n:5\r\n");
    ValuePool& pool = testPool();
    RespArrayReader reader(64);
    EXPECT_EQ(reader.read(p.ours.get(), 1, pool, values, error), Status::kProtocolError);
  }
}

TEST(RespArrayReader, AClosedPeerAndASilentOneAreReported) {
  std::vector<std::optional<RespArrayReader::Value>> values;
  std::string error;
  {
    Pair p;
    p.send("*1\r\n$10\r\nabc");
    p.theirs.reset();
    ValuePool& pool = testPool();
    RespArrayReader reader(64);
    EXPECT_EQ(reader.read(p.ours.get(), 1, pool, values, error), Status::kClosed);
  }
  {
    Pair p;  // nothing sent: SO_RCVTIMEO (200 ms) ends the wait
    ValuePool& pool = testPool();
    RespArrayReader reader(64);
    EXPECT_EQ(reader.read(p.ours.get(), 1, pool, values, error), Status::kTimedOut);
  }
}

}  // namespace
}  // namespace bagua
