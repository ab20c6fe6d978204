// The data-check pattern: every 8-byte word of a message is a function of
// (sending rank, tag, offset), where the tag encodes the size and iteration,
// so lost, stale, misplaced or foreign bytes all show up as wrong bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bagua::net_perf {

// Tag of iteration i of a message size in the check phase, or of buffer slot
// i in the timed phase.
uint64_t patternTag(size_t size, uint64_t i, bool timed);

// Fills data[0, size) with the pattern of (rank, tag).
void fillPattern(char* data, size_t size, int rank, uint64_t tag);

// Number of bytes of data[0, size) that differ from the pattern of (rank, tag).
uint64_t countWrongBytes(const char* data, size_t size, int rank, uint64_t tag);

}  // namespace bagua::net_perf
