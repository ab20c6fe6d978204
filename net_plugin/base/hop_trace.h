// Message trace (BAGUA_NET_TRACE=<dir>): where a small message's time goes
// across the ranks of one host. Each process keeps, in memory, one record
// per event of every message: isend, receive posted, chunk parked (it came
// before its receive), bytes arrived, test() done (each end); with the monotonic clock,
// which every process of a host shares, and the connection's id (the ports
// of its first stream, sender's << 16 | receiver's, which both ends read).
// The records go to <dir>/bagua-net-trace.<host>.<pid>.<ns>.tsv when the
// plugin is unloaded or the process exits (one file per load: ranks of
// several hosts or containers may share the directory and their pids);
// bench/gpu/hop_trace.py matches the ends. Off (the default): a call and
// one relaxed load of a flag per event.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace bagua::net::hoptrace {

enum class Event : char {
  kIsend = 's',   // at isend's start; size; extra: ns it took * 2, + 1 if it wrote the message whole
  kPost = 'p',    // size: the buffer's capacity
  kPark = 'k',    // a chunk's header came before its receive was posted
  kArrive = 'a',  // size: the chunk's bytes; extra: 1 on the caller stream
  kDone = 'd',    // test() reported a receive done; extra: test() calls it took
  kSent = 'e',    // test() reported a send done; extra: test() calls it took
  kPoll = 'o',    // the caller engine's poll (epoll_wait over every caller stream) starts
};

extern std::atomic<bool> gOn;
inline bool on() { return gOn.load(std::memory_order_relaxed); }

// Starts recording (once per process; "" leaves it off). Capacity: 2^20
// events, the rest are counted and dropped.
void start(const std::string& dir);

// Writes what was recorded and stops recording; returns the file's path ("" when
// off). Unloading the plugin or exiting does this; a process that ends with
// _exit must call it.
std::string flush();

// `ns`: the event's time on steadyNs()'s clock, 0 for now.
void record(Event event, uint32_t conn, uint64_t seq, uint64_t size, int64_t extra = 0,
            int64_t ns = 0);

// The id of the connection whose first stream is `fd`, read at the sending
// end (`sender`) or the receiving end: the same number at both.
uint32_t connectionId(int fd, bool sender);

}  // namespace bagua::net::hoptrace
