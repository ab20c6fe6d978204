#!/usr/bin/env python3
"""The host's memory-copy bandwidth, and the busbw ceiling it sets for a network
transport that stages through host memory (NCCL without GPUDirect over kernel TCP).

P processes each copy a private SIZE buffer into another (numpy, glibc memcpy:
non-temporal stores at this size, so a copy reads and writes each byte once) for
SECONDS, all at once; printed is the sum of bytes read and written per second, the
larger of P = CPUs/2 and P = CPUs.

Each byte a rank sends crosses host memory 6 times on that path: the sending GPU
writes it into pinned memory (DMA), the kernel copies it into a socket buffer (read +
write), the receiving kernel copies it out (read + write), the receiving GPU reads it
(DMA). A ring all_reduce's busbw is what each rank sends per second, so with N ranks
on one host busbw <= bandwidth / (6 N). Caches can beat this bound (a socket buffer
read back while it is still in the last-level cache costs no memory pass), so it is
an estimate of the ceiling, printed beside the others (tcp_limit.py), not a law.

Usage: mem_limit.py [--ranks "2 4"] [--seconds 3] [--size 256M]
"""
import argparse
import multiprocessing as mp
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tcp_limit import parse_size  # noqa: E402

PASSES = 6  # host-memory passes per byte sent: DMA write, 2 copies (read + write), DMA read


def copier(size, seconds, barrier, results):
    import numpy as np

    src = np.ones(size, dtype=np.uint8)
    dst = np.zeros(size, dtype=np.uint8)
    np.copyto(dst, src)  # fault every page in before the clock starts
    barrier.wait()
    copies, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        np.copyto(dst, src)
        copies += 1
    results.put((copies * size, time.monotonic() - t0))


def bandwidth(procs, size, seconds):
    """Bytes read + written per second by `procs` copying processes at once."""
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(procs), ctx.Queue()
    workers = [ctx.Process(target=copier, args=(size, seconds, barrier, results))
               for _ in range(procs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if any(w.exitcode != 0 for w in workers):
        raise SystemExit("mem_limit.py: a copying process failed (numpy missing?)")
    got = [results.get(timeout=5) for _ in workers]
    return sum(2 * copied / elapsed for copied, elapsed in got)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="2 4")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--size", default="256M")
    args = ap.parse_args()
    cpus = len(os.sched_getaffinity(0))
    size = parse_size(args.size)
    best = max(bandwidth(p, size, args.seconds) for p in sorted({max(1, cpus // 2), cpus}))
    ceilings = ", ".join(f"{n} ranks {best / (PASSES * int(n)) / 1e9:.1f}"
                         for n in args.ranks.split())
    print(f"memory copy {best / 1e9:.1f} GB/s (read + write, {cpus} CPUs); "
          f"busbw ceiling / {PASSES} passes: {ceilings} GB/s")


if __name__ == "__main__":
    main()
