#!/usr/bin/env bash
# Bagua-Net over an emulated link with delay, on one machine: two network
# namespaces ("hosts") joined by bench-link-emulator, a user-space delay line
# over TUN (this kernel has no sch_netem), with a one-way delay of RTT/2, a
# serialisation rate of RATE_MBIT in each direction and a tail-drop queue of
# at least one bandwidth-delay product. bagua-net-perf runs one rank in each
# namespace and measures, interleaved in the same run, the plugin at its
# defaults (4 streams, adaptive count), with 4 and 8 streams fixed
# (BAGUA_NET_ADAPTIVE_STREAMS=0), with 1 stream, and one plain blocking TCP
# socket per direction. A second pass caps the plugin's socket buffers
# (BAGUA_NET_SOCKET_BUFFER_BYTES=CAP), so that one stream's window cannot cover
# the bandwidth-delay product: a stream then moves about window/RTT, N streams
# N times that. The tool's TCP baseline takes no such knob and keeps the
# kernel's autotuning in both passes. The idle ping RTT through the emulator,
# the emulator's counters and the senders' retransmissions are recorded beside
# the results (OUT/delay_<RTT>ms_<RATE>mbit[_buf<CAP>].*); runs with other
# rates may share OUT_DIR, the report covers every delay_*.json there.
#
# The emulator runs SCHED_FIFO (EMU_PRIO; empty: normal scheduling): the link
# stands for hardware, and on 2 shared cores a normally scheduled relay was
# measured releasing packets 0.3-0.6 ms late on average (65-170 ms at worst)
# under load, against about 0.05 ms (10 ms at worst) with SCHED_FIFO. The
# kernel's RT throttling still leaves 5% of each second to other tasks.
#
# Usage (root; iproute2, python3): bench/cpu/delay_bench.sh OUT_DIR [RTT_MS ...]
#   defaults: RTT 1; RATE_MBIT=4000 MTU=9000 QUEUE_KB=(one BDP, >= 256)
#   CAP=256K (empty: no capped pass) REPS=3 SIZES="-b 1M -e 64M -f 4"
#   PATTERNS=uni,ring EMU_PRIO=50 EMU_SPIN_US=0 (poll for the last N us)
#   EMU_CPUS (e.g. 2-3): run the emulator on these CPUs, so that a run under
#   `taskset -c 0-1` gives the ranks 2 CPUs and the link its own (where
#   SCHED_FIFO is not allowed, as on the GPU host: EMU_PRIO= with EMU_CPUS)
#   PLUGIN_ENV (e.g. BAGUA_NET_CPUS=0-1): added to every plugin configuration
#   EXTRA_CONFIGS ("name=ENV=VAL[,ENV=VAL];name2=..."): more plugin configurations,
#   measured interleaved with the others (the pass's cap and PLUGIN_ENV added)
#   TCP_INFO_EVERY=S: every S seconds, the sending namespace's `ss -tin` (TCP_INFO:
#   busy / rwnd_limited / sndbuf_limited time, retransmissions, RTO) goes to
#   OUT/<pass>.tcp_info.txt, labelled with the configuration then running;
#   bench/cpu/tcp_info_summary.py condenses it per configuration
set -euo pipefail
set -m  # background jobs get their own process group: teardown can stop a whole run
OUT=${1:?usage: delay_bench.sh OUT_DIR [RTT_MS ...]}
shift
RTTS=${*:-1}
RATE_MBIT=${RATE_MBIT:-4000}
MTU=${MTU:-9000}
CAP=${CAP-256K}
REPS=${REPS:-3}
SIZES=${SIZES:-"-b 1M -e 64M -f 4"}
PATTERNS=${PATTERNS:-uni,ring}
EMU_SPIN_US=${EMU_SPIN_US:-0}
EMU_PRIO=${EMU_PRIO-50}
PLUGIN_ENV=${PLUGIN_ENV:-}
FIXED=BAGUA_NET_ADAPTIVE_STREAMS=0
EXTRA_CONFIGS=${EXTRA_CONFIGS:-}
HERE=$(cd "$(dirname "$0")" && pwd)
PERF=${PERF:-$HERE/../../build/tools/bagua-net-perf}
PLUGIN=${PLUGIN:-$HERE/../../build/net_plugin/libnccl-net-bagua.so}
EMU=${EMU:-$HERE/../../build/bench/tools/bench-link-emulator}
[[ -x $EMU ]] || { echo "no emulator at $EMU: build it (ninja -C build) or set EMU" >&2; exit 1; }
mkdir -p "$OUT"

A=bgndelay-a-$$
B=bgndelay-b-$$
IF=bnlink  # made by the emulator with this name in both namespaces
EMU_PID=
PERF_PID=
READY=$(mktemp -u "${TMPDIR:-/tmp}/delay_bench.$$.XXXXXX")
teardown() {
  if [[ -n $PERF_PID ]]; then  # interrupted: the tool and its rank processes
    kill -TERM -- "-$PERF_PID" 2>/dev/null || true
    wait "$PERF_PID" 2>/dev/null || true
    PERF_PID=
  fi
  if [[ -n $EMU_PID ]]; then  # SIGTERM: it prints its counters and exits
    kill -TERM "$EMU_PID" 2>/dev/null || true
    wait "$EMU_PID" 2>/dev/null || true
    EMU_PID=
  fi
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -f "$READY" "$READY.tmp"
}
trap teardown EXIT
trap 'exit 130' INT TERM

# ping NS DST COUNT: ICMP echo from NS (raw socket; iputils may be absent),
# prints min/median/mean/max RTT in ms; fails when no reply came back.
ping_rtt() {
  ip netns exec "$1" python3 - "$2" "$3" <<'EOF'
import os, socket, statistics, struct, sys, time
dst, count = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.settimeout(1.0)
ident = os.getpid() & 0xFFFF
def csum(b):
    t = sum(struct.unpack(f"!{len(b) // 2}H", b))
    t = (t >> 16) + (t & 0xFFFF)
    return ~(t + (t >> 16)) & 0xFFFF
rtts = []
for seq in range(count):
    body = struct.pack("!HH", ident, seq) + bytes(56)
    t0 = time.perf_counter()
    s.sendto(struct.pack("!BBH", 8, 0, csum(b"\x08" + bytes(3) + body)) + body, (dst, 0))
    try:
        while True:
            d = s.recv(2048)
            h = (d[0] & 0xF) * 4
            if d[h] == 0 and struct.unpack("!HH", d[h + 4:h + 8]) == (ident, seq):
                rtts.append((time.perf_counter() - t0) * 1e3)
                break
    except socket.timeout:
        pass
    time.sleep(0.02)
if not rtts:
    sys.exit(f"ping {dst}: no reply")
print(f"idle ping RTT {dst}, {len(rtts)}/{count} replies: min {min(rtts):.3f} median "
      f"{statistics.median(rtts):.3f} mean {statistics.mean(rtts):.3f} max {max(rtts):.3f} ms")
EOF
}

setup() {  # setup RTT_MS LOG: namespaces, emulator, addresses; waits for a ping
  teardown
  local delay_us queue_kb
  delay_us=$(awk -v r="$1" 'BEGIN { printf "%d", r * 500 }')
  # One bandwidth-delay product (rate x RTT), at least 256 KB.
  queue_kb=${QUEUE_KB:-$(awk -v r="$1" -v m="$RATE_MBIT" \
    'BEGIN { q = int(m * r * 1000 / 8 / 1024 + 1); print (q < 256 ? 256 : q) }')}
  ip netns add "$A"
  ip netns add "$B"
  echo "command: RATE_MBIT=$RATE_MBIT MTU=$MTU CAP=$CAP REPS=$REPS SIZES=\"$SIZES\" PLUGIN_ENV=$PLUGIN_ENV EXTRA_CONFIGS=\"$EXTRA_CONFIGS\"" \
    "PATTERNS=$PATTERNS EMU_PRIO=$EMU_PRIO EMU_CPUS=${EMU_CPUS:-} bench/cpu/delay_bench.sh OUT $1" >"$2"
  echo "link_emulator $A $B $delay_us $RATE_MBIT $queue_kb $MTU --spin-us $EMU_SPIN_US${EMU_PRIO:+ (SCHED_FIFO $EMU_PRIO)}${EMU_CPUS:+ (CPUs $EMU_CPUS)}" >>"$2"
  ${EMU_CPUS:+taskset -c "$EMU_CPUS"} ${EMU_PRIO:+chrt -f "$EMU_PRIO"} "$EMU" "$A" "$B" "$delay_us" "$RATE_MBIT" "$queue_kb" "$MTU" --spin-us "$EMU_SPIN_US" \
    --ready-file "$READY" >>"$2" 2>&1 &
  EMU_PID=$!
  for _ in $(seq 100); do
    [[ -s $READY ]] && break
    kill -0 "$EMU_PID" 2>/dev/null || { cat "$2" >&2; exit 1; }
    sleep 0.05
  done
  [[ -s $READY ]] || { echo "emulator did not start" >&2; exit 1; }
  ip -n "$A" addr add 10.233.0.1 peer 10.233.0.2 dev $IF
  ip -n "$B" addr add 10.233.0.2 peer 10.233.0.1 dev $IF
  for ns in "$A" "$B"; do
    ip -n "$ns" link set lo up
    ip -n "$ns" link set $IF mtu "$MTU" up
  done
  for _ in $(seq 20); do ping_rtt "$A" 10.233.0.2 1 >/dev/null 2>&1 && return 0; done
  echo "no ping across the emulated link" >&2
  exit 1
}

# sample_tcp_info STEM: `ss -tin` in the sending namespace while the run lasts.
sample_tcp_info() {
  while kill -0 "$PERF_PID" 2>/dev/null; do
    # (between configurations there may be no line to match: not an error)
    echo "=== $(date +%T) $(grep -o '\] [^ ]* rep [0-9/]*: [a-z]* [0-9A-Z]*' "$1.progress" | tail -n 1 || true)"
    ip netns exec "$A" ss -tin state established | grep ' busy:' || true
    sleep "$TCP_INFO_EVERY"
  done >"$1.tcp_info.txt" 2>&1
}

# run_pass RTT_MS NAME EXTRA_ENV: one bagua-net-perf run -> OUT/NAME.{json,txt}
run_pass() {
  local log="$OUT/$2.emulator.txt" base=$3
  if [[ -n $PLUGIN_ENV ]]; then base=${base:+$base,}$PLUGIN_ENV; fi
  local extra=${base:+,$base} more="" cfg
  if [[ -n $EXTRA_CONFIGS ]]; then
    IFS=';' read -ra cfgs <<<"$EXTRA_CONFIGS"
    for cfg in "${cfgs[@]}"; do more+=";$cfg$extra"; done
  fi
  setup "$1" "$log"
  ping_rtt "$A" 10.233.0.2 100 | tee "$OUT/$2.ping.txt" >&2
  # The machine may be shared: the load shows whether others competed for CPU.
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$log"
  # In the background so that a signal reaches the trap at once (bash runs
  # traps only between foreground commands).
  # shellcheck disable=SC2086
  NCCL_SOCKET_IFNAME="=$IF" "$PERF" --plugin "$PLUGIN" --ranks 2 --netns "$A,$B" \
    --pattern "$PATTERNS" $SIZES --reps "$REPS" --baseline --baseline-if $IF \
    --configs "bagua=$base;bagua-4-fixed=$FIXED$extra;bagua-1-stream=BAGUA_NET_STREAMS=1$extra;bagua-8-fixed=BAGUA_NET_STREAMS=8,$FIXED$extra$more" \
    --json "$OUT/$2.json" > >(tee "$OUT/$2.txt") 2> >(tee "$OUT/$2.progress" >&2) &
  PERF_PID=$!
  if [[ -n ${TCP_INFO_EVERY:-} ]]; then sample_tcp_info "$OUT/$2" & fi
  wait "$PERF_PID"
  PERF_PID=
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$log"
  # Packets the kernel dropped before the emulator read them (TUN queue
  # full), and the senders' retransmissions (fresh namespaces: pass totals).
  for ns in "$A" "$B"; do
    { echo "${ns%-*}: tcp_congestion_control $(ip netns exec "$ns" sysctl -n net.ipv4.tcp_congestion_control)"
      ip -n "$ns" -s link show $IF
      ip netns exec "$ns" nstat -asz TcpOutSegs TcpRetransSegs TcpExtTCPLossProbes TcpExtTCPTimeouts \
        | grep -v '^#'; } >>"$log"
  done
  teardown  # appends the emulator's own counters to the log
}

for rtt in $RTTS; do
  echo "== ${rtt} ms RTT, ${RATE_MBIT} Mbit/s, MTU ${MTU}" >&2
  run_pass "$rtt" "delay_${rtt}ms_${RATE_MBIT}mbit" ""
  if [[ -n $CAP ]]; then
    echo "== same, plugin socket buffers capped at $CAP" >&2
    run_pass "$rtt" "delay_${rtt}ms_${RATE_MBIT}mbit_buf${CAP,,}" "BAGUA_NET_SOCKET_BUFFER_BYTES=$CAP"
  fi
done
python3 "$HERE/report.py" --title "Emulated link with delay (TUN delay line)" \
  "$OUT" "$OUT"/delay_*.json

# A summary of the medians as a share of the emulated rate (read from the
# emulator's command line in each pass's log), with the ping and the logs,
# goes before report.py's tables.
python3 - "$OUT" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
lines = ["## Summary: median GB/s and share of the emulated rate", "",
         "Rates count IP packets; TCP payload can reach at most (MTU - 52) / MTU of them"
         " (IP + TCP headers with timestamps: 99.4% at MTU 9000).", ""]
for path in sorted(glob.glob(os.path.join(out, "delay_*.json"))):
    stem = os.path.splitext(os.path.basename(path))[0]
    data = json.load(open(path))
    names = list(dict.fromkeys(s["config"] for s in data["series"]))
    logs = [open(f).read().strip() for f in (os.path.join(out, f"{stem}.{k}.txt")
                                             for k in ("ping", "emulator")) if os.path.exists(f)]
    # link_emulator NS_A NS_B DELAY_US RATE_MBIT QUEUE_KB MTU ...
    emu = next((l.split() for l in "\n".join(logs).splitlines() if l.startswith("link_emulator")),
               None)
    rate = float(emu[4]) / 8000 if emu else float("nan")  # GB/s
    lines += [f"### {stem}", ""]
    if emu:
        lines += [f"One-way delay {emu[3]} us, {emu[4]} Mbit/s, queue {emu[5]} KB, MTU {emu[6]}.", ""]
    lines += ["| pattern | size | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for s0 in data["series"]:
        if s0["config"] != names[0]:
            continue
        for z0 in s0.get("sizes", []):
            cells = []
            for n in names:
                s = next(s for s in data["series"] if s["config"] == n and s["pattern"] == s0["pattern"])
                z = next((z for z in s.get("sizes", []) if z["size"] == z0["size"]), None)
                m = z["algbw_gbps"]["median"] if z else None
                cells.append(f"{m:.3f} ({100 * m / rate:.0f}%)" if m is not None else "failed")
            lines.append(f"| {s0['pattern']} | {z0['size'] >> 20}M | " + " | ".join(cells) + " |")
    lines += [""] + ["```\n" + log + "\n```\n" for log in logs]
readme = os.path.join(out, "README.md")
head, sep, rest = open(readme).read().partition("\n## ")
open(readme, "w").write(head + "\n" + "\n".join(lines) + sep + rest)
EOF
