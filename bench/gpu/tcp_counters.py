#!/usr/bin/env python3
"""TCP counters of a network namespace between two snapshots.

  tcp_counters.py snap FILE        (inside the namespace: copies /proc/net/snmp
                                    and /proc/net/netstat into FILE)
  tcp_counters.py diff BEFORE AFTER LABEL
                                   (prints one line: LABEL and the growth of
                                    the counters that say how TCP fared)

slow_link.sh snapshots both namespaces around each run, so a transport's
resends, timeouts and spurious timeouts can be told apart from the link's.
(iproute2's nstat gives the same where it is installed, as bench/cpu/delay_bench.sh
uses it; the GPU host has no iproute2, and this needs nothing but python3.)
"""
import sys

COUNTERS = ("OutSegs", "RetransSegs", "TCPTimeouts", "TCPSpuriousRTOs", "TCPLossProbes",
            "TCPFastRetrans", "TCPDSACKRecv")


def parse(text):
    values = {}
    lines = text.splitlines()
    for head, body in zip(lines[::2], lines[1::2]):
        names, numbers = head.split()[1:], body.split()[1:]
        for name, number in zip(names, numbers):
            values[name] = int(number)
    return values


def main():
    if sys.argv[1] == "snap":
        with open(sys.argv[2], "w") as out:
            for path in ("/proc/net/snmp", "/proc/net/netstat"):
                with open(path) as f:
                    out.write(f.read())
        return
    before, after, label = sys.argv[2:5]
    a = parse(open(before).read())
    b = parse(open(after).read())
    print(label + ": " + ", ".join(f"{n} {b.get(n, 0) - a.get(n, 0)}" for n in COUNTERS))


if __name__ == "__main__":
    main()
