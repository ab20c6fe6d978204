#!/usr/bin/env python3
"""Where a small message's time goes, from BAGUA_NET_TRACE's files.

Every rank of one host writes DIR/bagua-net-trace.HOST.PID.NS.tsv (one row per
event of each message: isend 's', receive posted 'p', parked 'k', chunk
arrived 'a', test() done 'd' (receive) / 'e' (send); the host's monotonic
clock in ns). This
matches the two ends of every connection by its id and message sequence
number and prints, for messages up to --max-bytes:

  flight     isend's start at the sender -> its bytes read at the receiver
             (traces before 2026-12-02's review stamped isend at its end)
  to test    bytes read -> the test() that reported the receive done
  late post  how many came before their receive was posted (parked)
  turnaround a rank's last arrival -> its next isend: NCCL's proxy
             noticing the GPU's output plus the GPU's own work (LL: the
             GPU reads the arrived bytes from host memory itself)
  polls      the caller engine's polls ('o'): their interval, and for the
             poll that read each caller-stream message, when it began
             (after the isend, after the poll before) and its turn's time

Usage: hop_trace.py DIR [--max-bytes 4096] [--skip-first 0.2]
(--skip-first: the fraction of each process's time span left out, the
warm-up). Percentiles in us.
"""
import argparse
import bisect
import collections
import glob
import os
import statistics
import sys


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            ns, event, conn, seq, size, extra, tid = line.split("\t")
            rows.append((int(ns), event, int(conn), int(seq), int(size), int(extra), int(tid)))
    return sorted(rows)  # written in the order slots were taken, not quite by time


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


def line(name, values):
    if not values:
        return f"| {name} | 0 | | | | |"
    us = [v / 1000 for v in values]
    return (f"| {name} | {len(us)} | {pct(us, 0.1):.1f} | {statistics.median(us):.1f} | "
            f"{pct(us, 0.9):.1f} | {statistics.mean(us):.1f} |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--max-bytes", type=int, default=4096)
    p.add_argument("--skip-first", type=float, default=0.2)
    args = p.parse_args()
    files = sorted(glob.glob(os.path.join(args.dir, "bagua-net-trace.*.tsv")))
    if not files:
        sys.exit(f"no bagua-net-trace.*.tsv in {args.dir}")
    procs = {}
    for path in files:
        rows = load(path)
        if not rows:
            continue
        start, end = rows[0][0], rows[-1][0]
        cut = start + (end - start) * args.skip_first
        procs[os.path.basename(path)] = [r for r in rows if r[0] >= cut]

    sends = {}       # (conn, seq) -> (ns, size, proc)
    arrives = {}     # (conn, seq) -> (ns, proc, tid, caller)
    recv_done = {}   # (conn, seq) -> (ns, tests)
    posts = {}
    parked = 0
    for proc, rows in procs.items():
        for ns, event, conn, seq, size, extra, tid in rows:
            key = (conn, seq)
            if event == "s":
                sends[key] = (ns, size, proc)
            elif event == "a":
                arrives.setdefault(key, (ns, proc, tid, extra))
                arrives[key] = max(arrives[key], (ns, proc, tid, extra))  # the last chunk
            elif event == "p":
                posts[key] = ns
            elif event == "k" and size <= args.max_bytes:
                parked += 1
            elif event == "d":
                recv_done[key] = (ns, extra)

    flight, to_test, post_after_send, tests = [], [], [], []
    arrive_threads = collections.Counter()
    for key, (sent, size, _) in sends.items():
        if size > args.max_bytes or key not in arrives:
            continue
        got, proc, tid, caller = arrives[key]
        flight.append(got - sent)
        arrive_threads["caller stream" if caller else "worker stream"] += 1
        if key in recv_done:
            to_test.append(recv_done[key][0] - got)
            tests.append(recv_done[key][1])
        if key in posts and posts[key] > sent:
            post_after_send.append(posts[key] - sent)

    # Turnaround: per process, each small isend after the latest arrival.
    turnaround = []
    for proc, rows in procs.items():
        last_arrival = None
        for ns, event, conn, seq, size, extra, tid in rows:
            if event == "a" and size <= args.max_bytes:
                last_arrival = ns
            elif event == "s" and size <= args.max_bytes and last_arrival is not None:
                turnaround.append(ns - last_arrival)
                last_arrival = None

    # The caller engine's polls around each arrival on the caller stream:
    # when the poll that read it began (after the isend?), how long after the
    # poll before it, and how long its turn took to the bytes.
    poll_after_send, poll_gap, in_turn, isend_cost, poll_interval = [], [], [], [], []
    arrivals_by_proc = collections.defaultdict(list)
    for key, (got, proc, tid, caller) in arrives.items():
        if caller and key in sends and sends[key][1] <= args.max_bytes:
            arrivals_by_proc[proc].append((got, sends[key][0]))
    for proc, rows in procs.items():
        polls = [r[0] for r in rows if r[1] == "o"]
        poll_interval += [b - a for a, b in zip(polls, polls[1:])]
        for got, sent in arrivals_by_proc[proc]:
            i = bisect.bisect_right(polls, got) - 1
            if i < 1:
                continue
            poll_after_send.append(polls[i] - sent)
            poll_gap.append(polls[i] - polls[i - 1])
            in_turn.append(got - polls[i])
        isend_cost += [r[5] // 2 for r in rows if r[1] == "s" and r[4] <= args.max_bytes]

    print(f"{len(procs)} processes, {len(sends)} messages sent, "
          f"{len(flight)} small ones (<= {args.max_bytes} B) matched at both ends")
    print("| step | n | p10 us | median us | p90 us | mean us |")
    print("|---|---|---|---|---|---|")
    print(line("flight (isend's start -> bytes read)", flight))
    print(line("bytes read -> test() done", to_test))
    print(line("receive posted after the isend (by)", post_after_send))
    print(line("turnaround (arrival -> next isend)", turnaround))
    print(line("isend's own time (its sendmsg)", isend_cost))
    print(line("caller polls: interval", poll_interval))
    print(line("poll that read it: began after the isend by", poll_after_send))
    print(line("poll that read it: after the poll before", poll_gap))
    print(line("poll that read it: start -> bytes read", in_turn))
    print(f"parked chunks: {parked}; read on: {dict(arrive_threads)}; "
          f"test() calls per receive: median {statistics.median(tests) if tests else 0}, "
          f"p90 {pct(tests, 0.9) if tests else 0}")


if __name__ == "__main__":
    main()
