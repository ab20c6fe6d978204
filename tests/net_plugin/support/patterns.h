// Test helpers that need no plugin: verifiable data and process counters.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bagua::net::testing {

// Deterministic bytes for message `seed`; verifyPattern returns the index of
// the first wrong byte, or -1.
void fillPattern(uint8_t* data, size_t size, uint64_t seed);
long long verifyPattern(const uint8_t* data, size_t size, uint64_t seed);

// Threads the plugin started (named "bagua-net-N"), from /proc/self/task.
int pluginThreadCount();
// pluginThreadCount() once it is at most `want`, polled for up to 2 s: a
// joined thread can stay listed in /proc/self/task for a moment (the kernel
// wakes the joiner before it reaps the task). A thread that really outlives
// its owner still shows.
int pluginThreadCountSettled(int want);
// Nanoseconds the plugin's threads have run on a CPU, summed (from each
// thread's /proc/self/task/TID/schedstat).
uint64_t pluginThreadsCpuNs();
// Pins every thread the plugin started to `cpu` (sched_setaffinity on each
// TID: BAGUA_NET_CPUS is read once, at the plugin's init, before any test
// runs); returns how many it pinned, -1 when one could not be.
int pinPluginThreads(int cpu);
// Open file descriptors of this process (from /proc/self/fd).
int openFdCount();

}  // namespace bagua::net::testing
