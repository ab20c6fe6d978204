"""The cached dataset's targets on CPU (issue 23), each against its baseline
in the same run, repetitions interleaved:

  epochs   a dataset whose __getitem__ decodes a generated PNG (zlib inflate
           and the Sub filter undone: ~2 ms of real work per sample): epoch
           time without a cache, then epochs 1 and 2 through CachedDataset
           with the memory and the Redis backend. Target: epoch 2 / epoch 1
           <= 0.2 (memory), <= 0.3 (Redis).
  batchget reading cached samples from Redis, a batch at a time and collated
           as a DataLoader does: CachedDataset.__getitems__ (one MGET per
           batch, typed raw values) against the original's way (one GET per
           sample, pickle.loads), all on the same server, in rounds that
           rotate their order. Two baselines: redis-py (what the original
           used; when installed) and one single-key GET per sample through
           this package's hiredis client (a faster client: the conservative
           baseline). Target: >= 3x samples/s (median of per-round ratios).
           Also reported: samples per CPU second of this process and the
           server together, which load from other processes moves less.

  python bench/cpu/data_cache_bench.py [--reps 5] [--rounds 30] [--samples 256] [--json OUT]
"""
import argparse
import json
import os
import pickle
import platform
import statistics
import struct
import sys
import time
import zlib

import numpy as np
import torch
from torch.utils.data import default_collate

from bagua import _C
from bagua.torch_api.contrib import CachedDataset

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def make_png(height, width, seed):
    """An RGB PNG of a noisy gradient, every row with filter 1 (Sub)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    image = np.stack([(x + seed) % 256, (y * 2) % 256, (x + y) % 256], axis=-1).astype(np.int16)
    image = (image + rng.integers(-12, 13, image.shape)).clip(0, 255).astype(np.uint8)
    sub = image.copy()
    sub[:, 1:] = image[:, 1:] - image[:, :-1]  # uint8 arithmetic wraps, as PNG's filter
    rows = np.concatenate([np.ones((height, 1), np.uint8), sub.reshape(height, -1)], axis=1)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (PNG_SIGNATURE + png_chunk(b"IHDR", ihdr) +
            png_chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + png_chunk(b"IEND", b""))


def decode_png(data):
    """RGB, 8-bit, filter 1 on every row: the decoder the benchmark's images need."""
    pos, idat, width, height = 8, [], 0, 0
    while pos < len(data):
        (length,) = struct.unpack_from(">I", data, pos)
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack_from(">II", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8).reshape(height, 1 + width * 3)
    assert (raw[:, 0] == 1).all(), "only filter 1 rows are generated"
    image = np.cumsum(raw[:, 1:].reshape(height, width, 3), axis=1, dtype=np.uint8)
    return torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1)))


class PngDataset(torch.utils.data.Dataset):
    def __init__(self, n, side):
        self.images = [make_png(side, side, i) for i in range(n)]

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return decode_png(self.images[i]), i % 10


def epoch_time(dataset, batch_size):
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, num_workers=0)
    t = time.perf_counter()
    n = 0
    for images, labels in loader:
        n += len(labels)
    assert n == len(dataset)
    return time.perf_counter() - t


def summary(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def run_epochs(args, source, rep):
    out = {"plain": epoch_time(source, args.batch)}
    for backend in args.backends:
        ds = CachedDataset(source, backend=backend, dataset_name=f"epochs{rep}",
                           capacity_per_node=2 << 30)
        first = epoch_time(ds, args.batch)
        second = epoch_time(ds, args.batch)
        stats = ds.stats()
        assert stats["hits"] == len(source) and stats["store_errors"] == 0, stats
        out[backend] = {"epoch1": first, "epoch2": second, "ratio": second / first}
        ds.cache_loader.close()
    return out


def redis_py_client(host, port, password):
    try:
        import redis
    except ImportError:
        return None
    return redis.Redis(host=host, port=port, password=password)


def run_batchget(args, samples, name):
    """Samples/s of the ways of reading the same cached samples, per round
    (the order of the ways rotates from round to round)."""
    ds = CachedDataset(_ListDataset(samples), backend="redis", dataset_name=name,
                       capacity_per_node=2 << 30)
    store = ds.cache_loader.store
    n = len(samples)
    for start in range(0, n, args.batch):  # ours: filled through the loader (typed records)
        ds.__getitems__(list(range(start, min(n, start + args.batch))))
    ds.cache_loader.flush()
    # The original's records: pickles under their own keys, written with MSET.
    (host, port), = store.servers
    client = _C.RedisShards.connect(store.servers, store._password, 5.0)
    client.set_many([(f"orig_{i}", pickle.dumps(s)) for i, s in enumerate(samples)])
    py = redis_py_client(host, port, store._password)

    server_pid = store.server_process.pid

    def timed(body):
        """samples/s of wall time, and samples per CPU second of this process
        and the server together (steadier on a shared machine)."""
        wall, cpu, server = time.perf_counter(), time.process_time(), cpu_seconds(server_pid)
        body()
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu + cpu_seconds(server_pid) - server
        return {"wall": n / wall, "cpu": n / max(cpu, 1e-9)}

    # Each as a DataLoader's fetch would: a batch's samples, then collated.
    def original(get):
        for start in range(0, n, args.batch):
            default_collate([pickle.loads(get(f"orig_{i}"))
                             for i in range(start, min(n, start + args.batch))])

    def ours():
        for start in range(0, n, args.batch):
            default_collate(ds.__getitems__(list(range(start, min(n, start + args.batch)))))

    ways = {"ours": ours, "hiredis_get": lambda: original(lambda k: client.get_many([k])[0])}
    if py is not None:
        ways["redis_py_get"] = lambda: original(py.get)
    names = list(ways)
    rounds = []
    before = ds.stats()["hits"]
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        rounds.append({way: timed(ways[way]) for way in order})
    assert ds.stats()["hits"] - before == n * args.rounds
    ds.cache_loader.close()
    return rounds


def cpu_seconds(pid):
    """User + system CPU seconds of process pid so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _ListDataset(torch.utils.data.Dataset):
    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        return self.samples[i]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--samples", type=int, default=256, help="dataset size")
    p.add_argument("--side", type=int, default=288,
                   help="image side in pixels (288: ~2 ms of decode on the dev VM)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--getsamples", type=int, default=512, help="samples for batchget")
    p.add_argument("--rounds", type=int, default=30, help="interleaved rounds of batchget")
    p.add_argument("--backends", default="memory,redis")
    p.add_argument("--json", help="write the raw results here")
    args = p.parse_args()
    args.backends = args.backends.split(",")
    torch.set_num_threads(1)

    source = PngDataset(args.samples, args.side)
    t = time.perf_counter()
    for i in range(len(source)):
        source[i]
    per_sample_ms = (time.perf_counter() - t) / len(source) * 1e3
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, torch {torch.__version__}, python {sys.version.split()[0]}")
    print(f"# PNG {args.side}x{args.side} RGB ({len(source.images[0]) / 1e3:.0f} kB compressed), "
          f"decode {per_sample_ms:.2f} ms/sample")
    results = {"decode_ms": per_sample_ms, "epochs": [], "batchget": {}}
    for rep in range(args.reps):
        results["epochs"].append(run_epochs(args, source, rep))
        print(json.dumps(results["epochs"][-1]))
    sizes = {}
    for side in sorted({64, 128, args.side}):
        images = [torch.randint(0, 255, (3, side, side), dtype=torch.uint8)
                  for _ in range(min(args.getsamples, 256))]
        sizes[f"3x{side}x{side} uint8 + label ({3 * side * side / 1e3:.0f} kB)"] = \
            [(images[i % len(images)], i % 10) for i in range(args.getsamples)]
    if "redis" in args.backends:
        for i, (name, samples) in enumerate(sizes.items()):
            results["batchget"][name] = run_batchget(args, samples, f"bg{i}")
            print(name, json.dumps(results["batchget"][name]))

    print("\n| backend | plain epoch (s) | epoch 1 (s) | epoch 2 (s) | epoch 2 / epoch 1 "
          "min / median / max | target |")
    print("|---|---|---|---|---|---|")
    plain = summary([r["plain"] for r in results["epochs"]])
    for backend, target in (("memory", 0.2), ("redis", 0.3)):
        if backend not in args.backends:
            continue
        rows = [r[backend] for r in results["epochs"]]
        ratio = summary([r["ratio"] for r in rows])
        print(f"| {backend} | {plain['median']:.3f} | "
              f"{statistics.median(r['epoch1'] for r in rows):.3f} | "
              f"{statistics.median(r['epoch2'] for r in rows):.3f} | "
              f"{ratio['min']:.3f} / {ratio['median']:.3f} / {ratio['max']:.3f} | "
              f"<= {target}: {'met' if ratio['max'] <= target else 'NOT met'} |")
    if results["batchget"]:
        print("\n| samples | baseline (the original's way) | measure | baseline median | "
              "ours median | ours / baseline per round: min / median / max | target (median) |")
        print("|---|---|---|---|---|---|---|")
        labels = {"redis_py_get": "redis-py GET per sample + pickle.loads (the original)",
                  "hiredis_get": "hiredis GET per sample + pickle.loads (faster client)"}
        measures = {"wall": "samples/s", "cpu": "samples per CPU s (client + server)"}
        for name, rounds in results["batchget"].items():
            for way, label in labels.items():
                if way not in rounds[0]:
                    continue
                for m, unit in measures.items():
                    ratio = summary([r["ours"][m] / r[way][m] for r in rounds])
                    print(f"| {name} | {label} | {unit} | "
                          f"{statistics.median(r[way][m] for r in rounds):.0f} | "
                          f"{statistics.median(r['ours'][m] for r in rounds):.0f} | "
                          f"{ratio['min']:.2f} / {ratio['median']:.2f} / {ratio['max']:.2f} | "
                          f">= 3: {'met' if ratio['median'] >= 3 else 'NOT met'} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
