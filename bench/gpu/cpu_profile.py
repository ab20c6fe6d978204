#!/usr/bin/env python3
"""Where a command's CPU time goes, by thread name, across every process.

Runs COMMAND, samples /proc every --interval seconds while it runs, and prints
the host's busy share (user, system, softirq; from /proc/stat) and, per thread
name with its trailing number dropped ("bagua-net-12" -> "bagua-net-#"), the
CPU seconds and context switches (voluntary = it slept, involuntary = it was
preempted) of every thread that ran during the command. For perf-less hosts:
it tells a transport's worker threads from NCCL's proxy threads and the
kernel's softirq time. A thread that ends between two samples loses at most
one interval of its time.

Usage: cpu_profile.py [--interval 0.2] [--out FILE] -- COMMAND ...
"""
import argparse
import os
import re
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def system_times():
    """(user, system, softirq, idle+iowait, total) jiffies from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = v[:7]
    return user + nice, system + irq, softirq, idle + iowait, sum(v[:8])


def thread_times():
    """{(pid, tid): (name, cpu jiffies, voluntary, involuntary switches)}."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            base = f"/proc/{pid}/task/{tid}"
            try:
                with open(f"{base}/stat") as f:
                    stat = f.read()
                with open(f"{base}/status") as f:
                    status = f.read()
            except OSError:
                continue
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            cpu = int(fields[11]) + int(fields[12])  # utime + stime
            vol = int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", status, re.M).group(1))
            invol = int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", status, re.M).group(1))
            out[(pid, tid)] = (name, cpu, vol, invol)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--out")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command")
    start = thread_times()
    sys0, t0 = system_times(), time.monotonic()
    last = dict(start)
    proc = subprocess.Popen(cmd)
    while proc.poll() is None:
        time.sleep(args.interval)
        last.update(thread_times())
    sys1, wall = system_times(), time.monotonic() - t0

    by_name = {}
    for key, (name, cpu, vol, invol) in last.items():
        _, cpu0, vol0, invol0 = start.get(key, (name, 0, 0, 0))
        if cpu == cpu0 and vol == vol0 and invol == invol0:
            continue
        group = re.sub(r"\d+$", "#", name.strip())
        g = by_name.setdefault(group, [0, 0, 0, 0])
        g[0] += 1
        g[1] += (cpu - cpu0) / TICK
        g[2] += vol - vol0
        g[3] += invol - invol0

    d = [b - a for a, b in zip(sys0, sys1)]
    ncpu = os.cpu_count()
    lines = [
        f"command: {' '.join(cmd)} (rc {proc.returncode}), {wall:.1f} s on {ncpu} CPUs",
        f"host busy: user {d[0] / d[4]:.0%}, system {d[1] / d[4]:.0%}, softirq {d[2] / d[4]:.0%},"
        f" idle {d[3] / d[4]:.0%}",
        "",
        "| threads (name) | count | CPU s | CPUs busy | voluntary switches | involuntary |",
        "|---|---|---|---|---|---|",
    ]
    for name, (n, cpu, vol, invol) in sorted(by_name.items(), key=lambda kv: -kv[1][1]):
        if cpu < 0.05 * wall and cpu < 0.5:
            continue
        lines.append(f"| {name} | {n} | {cpu:.1f} | {cpu / wall:.2f} | {vol} | {invol} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
