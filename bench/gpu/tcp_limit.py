#!/usr/bin/env python3
"""The host's ceiling for a ring of ranks over loopback TCP: N processes, each sending
to the next over K sockets and receiving from the previous over K, all at once, for
SECONDS. Prints what each rank sent per second (GB/s): for a ring all_reduce that is
busbw's ceiling, since a rank sends 2(N-1)/N of the message per all_reduce and busbw
is that over the time. No transport (NCCL's socket or Bagua-Net, both kernel TCP
underneath) moves more than the kernel's copies allow here.

--gpu adds the GPU's side of NCCL's network path: every chunk is copied from a GPU
buffer into a pinned host buffer before it is sent and from pinned host memory to the
GPU after it arrived (cudaMemcpyAsync on each stream's own CUDA stream; all ranks on
GPU 0, under MPS when the caller runs a daemon), as NCCL stages data through host
memory for a network without GPUDirect. NCCL's kernels store to host memory with SMs
rather than copy engines, so this is one estimate of that path, not NCCL's own.

Usage: tcp_limit.py --ranks N --streams K [--seconds 5] [--chunk 4M] [--gpu]
"""
import argparse
import multiprocessing as mp
import socket
import threading
import time

WARMUP_S = 1.0


def parse_size(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * scale[text[-1]] if text[-1] in scale else int(text)


class GpuStage:
    """One stream's GPU buffer, its pinned host copy and CUDA stream (--gpu)."""

    def __init__(self, size):
        import torch

        self.torch = torch
        self.gpu = torch.zeros(size, dtype=torch.uint8, device="cuda:0")
        self.host = torch.zeros(size, dtype=torch.uint8, pin_memory=True)
        self.view = memoryview(self.host.numpy())
        self.stream = torch.cuda.Stream(device="cuda:0")

    def to_host(self):
        with self.torch.cuda.stream(self.stream):
            self.host.copy_(self.gpu, non_blocking=True)
        self.stream.synchronize()

    def to_gpu(self):
        with self.torch.cuda.stream(self.stream):
            self.gpu.copy_(self.host, non_blocking=True)
        self.stream.synchronize()


def rank_main(rank, n, streams, seconds, chunk, ports, ready, results, gpu=False):
    """Listens for the previous rank's K sockets, connects K to the next, moves bytes."""
    # Each stream's buffers and CUDA stream, made before this rank says it is ready.
    stages = [(GpuStage(chunk), GpuStage(chunk)) for _ in range(streams)] if gpu else None
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(streams)
    ports[rank] = listener.getsockname()[1]
    ready.wait()
    nxt = (rank + 1) % n
    out = [socket.create_connection(("127.0.0.1", ports[nxt])) for _ in range(streams)]
    inc = [listener.accept()[0] for _ in range(streams)]
    start = time.monotonic()
    t0, t1 = start + WARMUP_S, start + WARMUP_S + seconds
    sent = [0] * streams

    def send(i):
        stage = stages[i][0] if gpu else None
        data = stage.view if gpu else bytes(chunk)
        while True:
            now = time.monotonic()
            if now >= t1:
                break
            if gpu:
                stage.to_host()
            out[i].sendall(data)
            if t0 <= now:
                sent[i] += chunk
        out[i].shutdown(socket.SHUT_WR)

    def recv(i):
        if not gpu:
            buf = bytearray(chunk)
            while inc[i].recv_into(buf):
                pass
            return
        stage = stages[i][1]
        got = 0
        while (n := inc[i].recv_into(stage.view[got:])):
            got += n
            if got == chunk:
                stage.to_gpu()
                got = 0

    threads = [threading.Thread(target=send, args=(i,)) for i in range(streams)]
    threads += [threading.Thread(target=recv, args=(i,)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results[rank] = sum(sent) / seconds / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--chunk", default="4M")
    ap.add_argument("--gpu", action="store_true",
                    help="stage every chunk through GPU 0 (copy to host before the send, "
                         "to the GPU after the receive)")
    args = ap.parse_args()
    chunk = parse_size(args.chunk)
    # CUDA does not survive fork: --gpu ranks are started fresh.
    ctx = mp.get_context("spawn" if args.gpu else "fork")
    with ctx.Manager() as manager:
        ports = manager.dict()
        results = manager.dict()
        ready = manager.Event()
        procs = [ctx.Process(target=rank_main, args=(r, args.ranks, args.streams, args.seconds,
                                                      chunk, ports, ready, results, args.gpu))
                 for r in range(args.ranks)]
        for p in procs:
            p.start()
        while len(ports) < args.ranks:
            time.sleep(0.01)
        ready.set()
        for p in procs:
            p.join()
        if any(p.exitcode != 0 for p in procs):
            raise SystemExit("tcp_limit.py: a rank failed")
        per_rank = sorted(results[r] for r in range(args.ranks))
    path = "GPU -> host -> tcp -> host -> GPU" if args.gpu else "tcp"
    print(f"{path} ring limit, {args.ranks} ranks, {args.streams} streams to each neighbour: "
          f"{per_rank[0]:.2f} GB/s per rank (slowest; fastest {per_rank[-1]:.2f})")


if __name__ == "__main__":
    main()
