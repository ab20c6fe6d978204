// The tuner's decisions, as plain functions of what it is told (tables in,
// choices out; tests/net_plugin/nccl_tuner_test.cc): the channel floor NCCL should
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
// kMbpsPerChannel (at least 2): 8 on 10 Gbit/s. Each channel is a pipeline
// whose steps wait on the peer, so a long path needs several to stay full:
// over an emulated 10 Gbit/s link with 1 ms each way NCCL's 2 channels moved
// 84-88% of the line at 64 MiB and 8 moved 93-94%, DDP 9.6 -> 10.8 steps/s;
// with 5 ms each way 2 channels 42%, 8 83% (DDP 4.0 -> 7.4); with no delay
// (veth, tbf) 2, 4 and 8 were level at 92-96%
// (bench/results/slow_link_channels_gpu_2026-12-01). 16 on a 10 Gbit/s veth
// moved 85-91% against 2's 95-96% (bench/results/slow_link_gpu_2026-11-28),
// hence the cap. The decision must be the same on every rank (NCCL splits a
// collective over the channels each rank names), so it rests on the link's
// speed and the message size only, never on a measured round trip. A link
// whose speed nobody reports (lo, many virtual NICs) is not capped: over lo
// the floor's channels are the measured win above and below.
//
// The automatic floor is one channel per CPU of the rank's share of the host,
// at most kAutoChannels (2 ranks on 16 CPUs: 8; 4 ranks: 4; 8 ranks: 2, where
// the tuner leaves NCCL's own channels alone). With 16 channels every rank ran
// 32 connections' workers on its few CPUs, and all_reduce at 16-256 MiB moved
// 0.67-0.90x what 4 channels did at 4 ranks and 0.58-0.88x what NCCL's 2 did
// at 8 ranks, two runs (bench/results/caller_stream_gpu_2026-11-29). At 2
// ranks (8 CPUs each) 8 channels moved 1.02-1.20x what 16 did at 16-256 MiB
// on three machines, and 6 or 12 about as much as 8 on one
// (bench/results/channel_floor_gpu_2026-12-03). Likely cause, not proven: the
// bytes staged in host memory, channels x NCCL_BUFFSIZE, outgrow what the host
// caches (16 channels with NCCL_BUFFSIZE=1 MiB gained as well).
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
  // The user chose channels: NCCL_MIN/MAX_NCHANNELS, NCCL_MIN/MAX_CTAS or
  // NCCL_MIN/MAX_NRINGS set (NCCL applies its minimum after its maximum, so
  // our floor would override a cap).
  bool userChannels = false;
  bool userAlgorithm = false;  // NCCL_ALGO or NCCL_PROTO set: NCCL's algorithm is theirs
  bool otherNetwork = false;  // NCCL_NET names a network other than Bagua-Net
  // NCCL_TUNER_PLUGIN names another tuner, or none; or, with it unset, a
  // libnccl-tuner.so on the library path, which NCCL then takes instead of ours.
  bool otherTuner = false;
  int ncclVersion = 0;        // ncclGetVersion() of the NCCL that loaded us; 0: unknown
  int linkMbps = 0;  // the slowest offered link's known speed (BAGUA_NET_SPEED_MBPS or sysfs); 0: unknown
};

// NCCL finds a tuner in its net plugin's library from 2.21 (2.20, the first
// with our oldest net ABI v8, loads only a v1 tuner that NCCL_TUNER_PLUGIN
// names): below it a floor would give every collective all the channels,
// with no tuner to lower them.
inline constexpr int kFirstNcclWithNetPluginTuner = 22100;

// Link speed per channel for the cap (see above).
inline constexpr int kMbpsPerChannel = 1250;
// The most the automatic floor gives (one per CPU of the rank's share up to it).
inline constexpr int kAutoChannels = 8;

// The floor before the link's cap: the knob, or the automatic one.
int floorChannels(const Policy& policy);

// The most channels the tuner gives: the floor knob, capped by a known link
// speed (at least 2).
int mostChannels(const Policy& policy);

// One communicator, as NCCL's tuner init describes it.
struct CommShape {
  size_t nRanks = 0;
  size_t nNodes = 0;
  // Bagua-Net's init ran in this process (NCCL 2.30+ loads the library, and
  // so its tuner, even when NCCL_NET picks another network, but skips its init).
  bool viaBagua = true;
};

// NCCL's algorithm for one collective, as far as the cost table it hands the
// tuner shows. The channel rule was measured with Ring and Tree; NVLS,
// CollNet and PAT keep NCCL's own channels.
enum class Algorithm { kUnknown, kTreeOrRing, kOther };
// The cheapest entry of NCCL's cost table (numAlgo rows of numProto floats;
// NCCL_ALGO_PROTO_IGNORE and other negative entries are not candidates), as
// NCCL itself picks; kUnknown without a table or a candidate.
Algorithm winningAlgorithm(const float* table, int numAlgo, int numProto);

// Below this a collective keeps NCCL's own choice: NCCL itself drops to one
// channel for messages this small.
inline constexpr size_t kSmallBytes = 64 * 1024;

// The NCCL_MIN_NCHANNELS value to set at init, or 0 to leave it alone (off,
// the user chose channels, or the link's cap is NCCL's own 2).
int channelFloor(const Policy& policy);

// Whether the tuner acts on this communicator at all: on, the user did not
// choose channels, Bagua-Net is the network, and it spans more than one node
// (crosses the network).
bool tunes(const Policy& policy, const CommShape& comm);

// Channels for one collective: 0 keeps NCCL's choice (not tuned, point to
// point, small, or an algorithm other than Ring and Tree); else
// ceil(nBytes / bytesPerChannel) within [2, floor].
int channelsFor(const Policy& policy, const CommShape& comm, ncclFunc_t func, size_t nBytes,
                Algorithm algorithm = Algorithm::kUnknown);

// One line for the log: what the tuner does for this communicator.
std::string describe(const Policy& policy, const CommShape& comm);

}  // namespace bagua::net::tuner
