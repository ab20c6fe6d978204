// The tuner's decisions, as plain functions of what it is told (tables in,
// choices out; tests/net_plugin/tuner_test.cc): the channel floor NCCL should
// create at init, and the channels of one collective.
//
// Why channels: on a network path NCCL's topology search gives 2 channels,
// and each channel is one pipeline of NCCL's proxy through the plugin. With
// 16, Bagua-Net's all_reduce moved 1.2-1.4x more at >= 32 MiB (2 and 4 ranks
// on one H100, bench/results/net_defaults_2026-11-25), but 128-512 KiB
// messages were 2-4x slower. So NCCL creates many channels (the floor) and
// the tuner hands each collective only as many as its size fills.
//
// On a link of known speed the channels are capped at one per
// kMbpsPerChannel (at least 2): over a 10 Gbit/s veth shaped with tbf, 16
// channels moved 85-91% of line rate at 16-64 MiB and NCCL's 2 moved 95-96%,
// with DDP 8% slower (bench/results/slow_link_gpu_2026-11-28). A link whose
// speed nobody reports (lo, many virtual NICs) is not capped: over lo the 16
// channels are the measured win above.
//
// Where a rank's share of the host's CPUs is below kCpusForAllChannels (4
// ranks on 16 CPUs: 4; 8 ranks: 2), the automatic floor is that share (at
// least 2; at 2 the tuner leaves NCCL's own channels alone): with 16 channels
// every rank ran 32 connections' workers on its few CPUs, and all_reduce at
// 16-256 MiB moved 0.67-0.90x what 4 channels did at 4 ranks and 0.58-0.88x
// what NCCL's 2 did at 8 ranks, two runs (bench/results/caller_stream_gpu_2026-11-29).
//
// NCCL's tuner can only lower a communicator's channels below what init
// created, so the floor has to be in place before NCCL reads
// NCCL_MIN_NCHANNELS (once per process, after the net plugin's init).
#pragma once

#include <cstddef>
#include <string>

#include "net_plugin/nccl/tuner.h"

namespace bagua::net::tuner {

// The knobs and the user's own NCCL settings that bound the tuner.
struct Policy {
  bool enabled = true;                 // BAGUA_NET_TUNER
  int channels = 0;                    // BAGUA_NET_TUNER_CHANNELS: the floor; 0: auto
  int rankCpus = 0;                    // this rank's share of the host's CPUs; 0: unknown
  size_t bytesPerChannel = 1u << 20;   // BAGUA_NET_TUNER_CHANNEL_BYTES
  bool userChannels = false;           // NCCL_MIN_NCHANNELS or NCCL_MAX_NCHANNELS set
  int linkMbps = 0;  // the slowest offered link's known speed (BAGUA_NET_SPEED_MBPS or sysfs); 0: unknown
};

// Link speed per channel for the cap (see above).
inline constexpr int kMbpsPerChannel = 5000;
// The automatic floor, and the CPU share from which a rank gets all of it.
inline constexpr int kAutoChannels = 16;
inline constexpr int kCpusForAllChannels = 8;

// The floor before the link's cap: the knob, or the automatic one.
int floorChannels(const Policy& policy);

// The most channels the tuner gives: the floor knob, capped by a known link
// speed (at least 2).
int mostChannels(const Policy& policy);

// One communicator, as NCCL's tuner init describes it.
struct CommShape {
  size_t nRanks = 0;
  size_t nNodes = 0;
};

// Below this a collective keeps NCCL's own choice: NCCL itself drops to one
// channel for messages this small.
inline constexpr size_t kSmallBytes = 64 * 1024;

// The NCCL_MIN_NCHANNELS value to set at init, or 0 to leave it alone (off,
// the user chose channels, or the link's cap is NCCL's own 2).
int channelFloor(const Policy& policy);

// Whether the tuner acts on this communicator at all: on, the user did not
// choose channels, and it spans more than one node (crosses the network).
bool tunes(const Policy& policy, const CommShape& comm);

// Channels for one collective: 0 keeps NCCL's choice (not tuned, point to
// point, or small); else ceil(nBytes / bytesPerChannel) within [2, floor].
int channelsFor(const Policy& policy, const CommShape& comm, ncclFunc_t func, size_t nBytes);

// One line for the log: what the tuner does for this communicator.
std::string describe(const Policy& policy, const CommShape& comm);

}  // namespace bagua::net::tuner
