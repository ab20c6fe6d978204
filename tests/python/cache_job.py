"""Jobs of test_cached_dataset.py that need their own processes.

  share OUT BACKENDS: as 2 ranks of one node (torchrun's variables): for each backend, rank 0
      loads every sample (filling the cache), rank 1 then reads them all back
      from the cache; writes each rank's counters and the Redis server's pid.
  crash: starts a Redis cache (no hosts), prints the server's and watchdog's
      pids, then SIGKILLs itself (no atexit, no destructor).
  pairing OUT: as 2 ranks of one node, both datasets left unnamed: rank 0
      makes an evaluation set's cache first (filled), then the training
      set's; rank 1 only the training set's, and reads sample 0 of it.
"""
import json
import os
import signal
import sys

import torch
import torch.distributed as dist

from bagua.torch_api.contrib import CachedDataset, CacheLoader

N = 64


class Source(torch.utils.data.Dataset):
    def __len__(self):
        return N

    def __getitem__(self, i):
        return torch.arange(i, i + 100, dtype=torch.float64).reshape(10, 10), {"label": i}


def same(a, b):
    return torch.equal(a[0], b[0]) and a[1] == b[1]


def share(out, backends):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    source = Source()
    result = {}
    for backend in backends:
        ds = CachedDataset(source, backend=backend, dataset_name="shared", writer_buffer_size=1,
                           capacity_per_node=64 << 20)
        if rank == 0:
            for i in range(N):
                ds[i]
        dist.barrier()
        ok = True
        if rank == 1:
            ok = all(same(ds[i], source[i]) for i in range(N))
        dist.barrier()  # rank 0 keeps its server up until rank 1 is done
        server = ds.cache_loader.store.server_process if backend == "redis" else None
        result[backend] = {"stats": ds.stats(), "ok": ok,
                           "server_pid": server.pid if server is not None else None}
    with open(f"{out}.rank{rank}.json", "w") as f:
        json.dump(result, f)
    dist.barrier()
    dist.destroy_process_group()


class Tagged(torch.utils.data.Dataset):
    def __init__(self, tag, n):
        self.tag, self.n = tag, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return f"{self.tag}-{i}"


def pairing(out):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        evaluation = CachedDataset(Tagged("VAL", 3), backend="memory", writer_buffer_size=1,
                                   capacity_per_node=16 << 20)
        evaluation[0]
    train = CachedDataset(Tagged("TRAIN", 4), backend="memory", writer_buffer_size=1,
                          capacity_per_node=16 << 20)
    dist.barrier()
    with open(f"{out}.rank{rank}.json", "w") as f:
        json.dump({"train0": train[0]}, f)
    dist.barrier()
    dist.destroy_process_group()


def crash():
    loader = CacheLoader(backend="redis", dataset_name="crash", capacity_per_node=16 << 20)
    loader.get(1, lambda k: torch.ones(3))
    server = loader.store.server_process
    print(json.dumps({"server": server.pid, "watchdog": server._process.watchdog_pid}),
          flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    if sys.argv[1] == "share":
        share(sys.argv[2], sys.argv[3].split(","))
    elif sys.argv[1] == "pairing":
        pairing(sys.argv[2])
    else:
        crash()
