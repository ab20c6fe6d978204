#!/usr/bin/env python3
"""Condenses a delay_bench.sh TCP_INFO_EVERY file (ss -tin samples) per
configuration: the share of busy time each socket was limited by the
receive window or the send buffer, the share of bytes retransmitted, and
the RTOs seen. Counters are cumulative per socket, so the last sample of
each configuration counts.

Usage: tcp_info_summary.py OUT/<pass>.tcp_info.txt [...]
"""
import re
import statistics
import sys


def field(line, name, pattern=r"(\d+)"):
    m = re.search(r"\b" + name + r":" + pattern, line)
    return m.group(1) if m else None


def median(values):
    return statistics.median(values) if values else "n/a"


def summarize(path):
    last = {}  # configuration -> socket lines of its last sample
    config, sample = None, []
    for line in open(path):
        if line.startswith("==="):
            if config and sample:
                last[config] = sample
            m = re.search(r"\] (\S+) rep", line)
            config, sample = (m.group(1) if m else None), []
        elif config and "busy:" in line:
            sample.append(line)
    if config and sample:
        last[config] = sample
    print(f"## {path}")
    print("| configuration | sockets | rwnd-limited | sndbuf-limited | bytes retransmitted | RTO ms "
          "| rtt ms (median) | cwnd (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for config, lines in last.items():
        busy = sum(int(field(l, "busy", r"(\d+)ms") or 0) for l in lines)
        rwnd = sum(int(field(l, "rwnd_limited", r"(\d+)ms") or 0) for l in lines)
        sndbuf = sum(int(field(l, "sndbuf_limited", r"(\d+)ms") or 0) for l in lines)
        sent = sum(int(field(l, "bytes_sent") or 0) for l in lines)
        retrans = sum(int(field(l, "bytes_retrans") or 0) for l in lines)
        rtos = sorted({field(l, "rto", r"([\d.]+)") for l in lines} - {None}, key=float)
        share = lambda part, whole: f"{100 * part / whole:.1f}%" if whole else "n/a"
        rtts = [float(v) for v in (field(l, "rtt", r"([\d.]+)/") for l in lines) if v]
        cwnds = [int(v) for v in (field(l, "cwnd") for l in lines) if v]
        print(f"| {config} | {len(lines)} | {share(rwnd, busy)} | {share(sndbuf, busy)} "
              f"| {share(retrans, sent)} | {', '.join(rtos)} | {median(rtts)} | {median(cwnds)} |")
    print()


for p in sys.argv[1:]:
    summarize(p)
