#!/usr/bin/env python3
"""Plain TCP through a link, the ceiling the transports are measured against
(slow_link.sh): STREAMS sockets from a sender to a receiver, one thread each
(socket calls release the GIL), SECONDS of sendall; the receiver prints what
all of them carried per second.

Usage: link_probe.py recv ADDR PORT STREAMS LABEL   (prints "LABEL: X Gbit/s")
       link_probe.py send ADDR PORT STREAMS SECONDS
"""
import socket
import sys
import threading
import time


def receive(addr, port, streams, label):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((addr, port))
    server.listen(streams)
    server.settimeout(20)
    conns = [server.accept()[0] for _ in range(streams)]
    counts = [0] * streams
    first = time.time()

    def drain(i):
        buf = bytearray(1 << 20)
        while True:
            n = conns[i].recv_into(buf)
            if not n:
                return
            counts[i] += n

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.time() - first
    print(f"{label}: {sum(counts) * 8 / seconds / 1e9:.2f} Gbit/s", flush=True)


def send(addr, port, streams, seconds):
    conns = [socket.create_connection((addr, port), timeout=20) for _ in range(streams)]
    payload = bytes(1 << 20)
    end = time.time() + seconds

    def fill(conn):
        while time.time() < end:
            conn.sendall(payload)
        conn.close()

    threads = [threading.Thread(target=fill, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    if len(sys.argv) != 6 or sys.argv[1] not in ("recv", "send"):
        sys.exit(__doc__)
    mode, addr, port, streams, last = sys.argv[1:]
    if mode == "recv":
        receive(addr, int(port), int(streams), last)
    else:
        send(addr, int(port), int(streams), float(last))
