// The --help text. Keep it in step with options.cc and tools/README.md.
#include "tools/bagua_net_perf/usage.h"

namespace bagua::net_perf {

namespace {

constexpr const char* kUsage = R"(usage: bagua-net-perf [options]

Drives an NCCL net plugin through its ABI (ncclNetPlugin_v12, else v11, v10,
v9, v8; the first found wins, as in NCCL) with host memory, the way NCCL's proxy
does, and prints bandwidth, latency and CPU cost per message size. Needs no
GPU and no NCCL.

Process model
  --ranks N            fork N rank processes on this machine (default 2); each
                       applies its configuration's environment, then dlopens the
                       plugin (plugins read their knobs once, at load)
  --rank R --world N --store DIR
                       run rank R of N by hand (other hosts or network
                       namespaces sharing DIR); DIR must be fresh for each
                       invocation; only rank 0 prints the report
  --netns NS0,NS1,..   with --ranks: rank r joins network namespace NSr (made
                       with ip netns add) before loading the plugin, so ranks
                       stand for hosts joined by an emulated link
  --timeout SEC        every wait gives up after SEC seconds (default 60) and
                       names what it waited for; the other ranks are killed

What to measure (nccl-tests flags)
  --pattern P[,P..]    ring: each rank sends to rank+1 and receives from rank-1
                       at once (with 2 ranks: both directions); uni: rank 0
                       sends to rank 1 only; pingpong: rank 0 sends, rank 1
                       echoes back (depth 1); tree: a binary tree (rank r's
                       children 2r+1, 2r+2), each round every rank receives
                       from its children, sends to its parent, receives from
                       it and sends to its children, as NCCL's tree all-reduce
                       of a small message (depth 1). Default ring.
  -b, --minbytes S     smallest message (default 8; K, M, G suffixes; 0 allowed)
  -e, --maxbytes S     largest message (default 64M)
  -f, --stepfactor F   size multiplication factor (default 2)
  -n, --iters N        timed iterations per size (default 20)
  -w, --warmup_iters N warm-up iterations per size (default 5)
  -d, --depth D        messages in flight per connection (default 4, max 32)
  -c, --check 0|1      data check (default 1): senders fill a pattern of
                       (rank, iteration, offset); receivers verify every byte of
                       every warm-up message (at least D of them) and, after the
                       timed loop, the last message of every buffer slot, and
                       every test() size. Wrong bytes are counted and make the
                       exit code 3.
  --dev D              plugin device index (default 0)
  --abi V              use ncclNetPlugin_vV (8 to 12) instead of the newest
                       table, as an older NCCL would
  --flows-per-peer K   call v11+ setNetAttr(maxFlowsPerPeer=K) before connect
                       and accept, as NCCL does with its channel count (default:
                       not called)

What to compare
  --plugin PATH        plugin library (default: the build's
                       net_plugin/libnccl-net-bagua.so)
  --configs "NAME=ENV=VAL,ENV2=VAL;NAME2=..."
                       configurations measured in the same run, each in fresh
                       processes (may be given several times). NAME= alone
                       means defaults. The key plugin=PATH loads another
                       library for that configuration, e.g.
                       "a=;b=BAGUA_NET_STREAMS=1;c=plugin=/opt/c/libnccl-net.so"
  --baseline           add configuration "tcp": the same pattern and sizes over
                       one blocking TCP socket per direction (a send thread and
                       a receive thread per rank) written in this tool
  --baseline-only      measure only the baseline (tests a machine, or this tool,
                       without any plugin)
  --baseline-if IF     interface for the baseline (default: first entry of
                       NCCL_SOCKET_IFNAME, else lo)
  --compare-to NAME    the configuration the ratio column divides by
                       (default: tcp, with --baseline)
  --reps R             repetitions, interleaved A B A B ... (default 1)

Output
  One table per pattern on stdout, progress on stderr, and with --json FILE
  every measurement as JSON.

Formulas (nccl-tests conventions; GB = 1e9 bytes)
  t         = max over sending/receiving ranks of (timed-loop wall time) / n;
              pingpong: rank 0's loop time / (2 n), one way; tree: a round
              (up and down)
  algbw     = S / t, S = message size in bytes (per connection)
  latency   = per message: ring and uni, from posting an iteration's requests
              until the receive (and, if any, the send) completes on a
              receiving rank; pingpong, round trip / 2; tree, rank 0's time
              from one round's last receive from its children to the next's.
              p50 and p99 over all timed messages. With depth D it includes
              queueing behind the D-1 earlier messages (Little's law: about
              D x t when busy).
  cpu s/GB  = sum over ranks of getrusage(RUSAGE_SELF) user+sys seconds of
              the rank process (all its threads, the plugin's included) over
              the timed loop / (sum over ranks of bytes sent+received / 1e9)
  busbw     = algbw for these point-to-point patterns (each link carries S
              per operation)
  Reported per configuration: median of the R repetitions, with min-max.
  Against the reference (tcp with --baseline, or --compare-to): per round r,
  algbw(config, r) / algbw(reference, r) and the same for cpu s/GB (rounds interleave, so a machine's
  drift between rounds cancels); the median of those ratios and, from 6 reps
  up, its distribution-free 95% confidence interval (order statistics of the
  binomial sign test). An interval that excludes a target decides it.

Plugin calls, as NCCL makes them
  init (v11+: once per run with a context and trafficClass -1), devices,
  getProperties, listen on the receiving side, handle (128 bytes) through the
  rendezvous, connect/accept polled until non-NULL, regMr (NCCL_PTR_HOST),
  isend (tag = own rank) / irecv (n = 1, tag = peer rank; NULL request: try
  again), test polled until done, deregMr, closeSend/closeRecv/closeListen,
  finalize (v11+), dlclose. WARN lines of the plugin are always printed, INFO
  lines with NCCL_DEBUG=INFO.

Exit codes
  0 success, 1 plugin error / timeout / crash of a rank, 2 bad command line,
  3 data mismatch.
)";

}  // namespace

void printUsage(FILE* out) { std::fputs(kUsage, out); }

}  // namespace bagua::net_perf
