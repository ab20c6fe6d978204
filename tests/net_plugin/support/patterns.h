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
// Open file descriptors of this process (from /proc/self/fd).
int openFdCount();

}  // namespace bagua::net::testing
