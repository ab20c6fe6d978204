"""CachedDataset and CacheLoader against the real stores: the node's shared
memory and redis-server processes started by the cache itself (skipped, with
the reason, where redis-server is not installed). Values round-trip bit for
bit; eviction under a small maxmemory; two ranks share the cache; a Redis
killed mid-epoch leaves training running on the source, counted and warned
once; no server outlives its job, even a SIGKILLed one; bad input gets a
clear error."""
import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import torch

from bagua import _C
from bagua.torch_api.contrib import CachedDataset, CacheLoader
from bagua.torch_api.contrib import cache_codec
from conftest import HERE, load_ranks

HAVE_REDIS = shutil.which("redis-server") is not None and _C.RedisShards.available()
needs_redis = pytest.mark.skipif(
    not HAVE_REDIS, reason="redis-server not installed (apt-get install redis-server) or "
    "bagua built without hiredis (libhiredis-dev)")
BACKENDS = ["memory", pytest.param("redis", marks=needs_redis)]


def redis_server_pids():
    """pids of the redis-server processes in the process table (zombies excluded)."""
    out = subprocess.run(["ps", "-eo", "pid=,stat=,comm="], capture_output=True, text=True).stdout
    return {int(p) for p, stat, comm in (line.split(None, 2) for line in out.splitlines())
            if comm.strip() == "redis-server" and not stat.startswith("Z")}


@pytest.fixture(scope="module", autouse=True)
def no_server_left_behind():
    before = redis_server_pids()
    yield
    deadline = time.monotonic() + 5
    while redis_server_pids() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert redis_server_pids() - before == set(), "a redis-server outlived its test"


@pytest.fixture
def loaders():
    made = []

    def make(*args, **kwargs):
        loader = CacheLoader(*args, **kwargs)
        made.append(loader)
        return loader

    yield make
    for loader in made:
        loader.close()


def gone_within(pid, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not _C.process_ended(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def torch_values():
    warnings.filterwarnings("ignore", message="ComplexHalf support is experimental")
    gen = torch.Generator().manual_seed(0)
    out = []
    for name in cache_codec._TORCH_DTYPE_NAMES:
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype):
            continue
        size = dtype.itemsize
        raw = torch.randint(0, 256, (6 * 5 * size,), dtype=torch.uint8, generator=gen)
        t = raw.view(dtype).reshape(6, 5)
        out += [(name, t), (name + "_t", t.t()), (name + "_0d", t[0, 0].clone()),
                (name + "_empty", t[:0])]
    return out


def bits_equal(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a.contiguous().reshape(-1).view(torch.uint8),
                       b.contiguous().reshape(-1).view(torch.uint8))


Point = collections.namedtuple("Point", "x y")


class Custom:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return type(other) is Custom and other.v == self.v


def python_values():
    return [
        ("scalars", (None, True, False, 0, -7, 2**63 - 1, -(2**63), 3.25, "héllo\u2603",
                     b"\0\xff")),
        ("big_int", 2**100),
        ("containers", {"a": [1, (2, 3)], 5: {"x": None}, (1, 2): b"k"}),
        ("numpy", [np.arange(12, dtype=">i4").reshape(3, 4), np.array(True),
                   np.array(["2020-01-01"], dtype="datetime64[ns]"), np.float16(1.5),
                   np.zeros((0, 3), dtype=np.complex64), np.arange(6.0)[::2]]),
        ("pickled", [Point(1, 2), Custom([1, 2]), np.array([1, "a"], dtype=object)]),
    ]


def same_python(a, b):
    if isinstance(a, np.ndarray) or isinstance(a, np.generic):
        return type(a) is type(b) and a.dtype == b.dtype and np.array_equal(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_python(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_python(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("backend", BACKENDS)
def test_values_round_trip_bit_exactly(backend, loaders):
    writer = loaders(backend, dataset_name="rt", writer_buffer_size=1, capacity_per_node=64 << 20)
    # A second loader (a fresh process state) reads what the first wrote.
    reader_state = writer.__getstate__()
    reader = CacheLoader.__new__(CacheLoader)
    reader.__setstate__(reader_state)
    values = torch_values() + python_values()
    for key, value in values:
        writer.get(key, lambda k, v=value: v)
    for key, value in values:
        got = reader.get(key, lambda k: pytest.fail(f"{k} was not cached"))
        if isinstance(value, torch.Tensor):
            assert bits_equal(got, value), key
        else:
            assert same_python(got, value), key
    stats = writer.stats()
    assert stats["misses"] == len(values) and stats["hits"] == len(values)
    assert stats["pickled"] == 2  # big_int's record and the "pickled" list's
    assert stats["store_errors"] == 0 and stats["fallbacks"] == 0


def test_threads_sharing_a_redis_loader_each_get_their_own_values(loaders):
    """One CacheLoader per process, used from a thread pool (its calls
    release the GIL): every value is the key's own (threads on the one
    connection read each other's replies: wrong tensors, then a heap
    corruption, before the calls took turns)."""
    from concurrent.futures import ThreadPoolExecutor

    cache = loaders(backend="redis", dataset_name="threads", capacity_per_node=1 << 28)
    def load(k):
        return torch.full((100 + k,), float(k))
    for k in range(200):
        cache.get(k, load)

    def right(k):
        value = cache.get(k, load)
        return value.numel() == 100 + k and float(value[0]) == k

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(right, [i % 200 for i in range(4000)]))
    assert results.count(False) == 0
    assert cache.stats()["store_errors"] == 0


def test_tensors_are_stored_without_pickle():
    record, pickled = cache_codec.encode((torch.ones(3, dtype=torch.bfloat16), 7, "x"))
    assert not pickled and b"pickle" not in record and record.startswith(cache_codec.MAGIC)
    with pytest.raises(ValueError, match="format marker"):
        cache_codec.decode(bytearray(b"garbage"))


@needs_redis
def test_redis_evicts_under_a_small_maxmemory(loaders):
    loader = loaders("redis", dataset_name="ev", writer_buffer_size=8,
                     capacity_per_node=2 << 20)
    n, size = 200, 50_000  # 10 MB through a 2 MB server
    value = lambda k: torch.full((size // 8,), float(k), dtype=torch.float64)  # noqa: E731
    for k in range(n):
        loader.get(k, value)
    loader.flush()
    stats = loader.stats()
    assert stats["evictions"] > 0 and stats["entries"] < n
    assert stats["bytes"] <= 4 << 20
    for k in range(n):  # evicted or not, every value is right
        assert torch.equal(loader.get(k, value), value(k))
    assert stats["store_errors"] == 0


def run_node_ranks(job, out, *args):
    """cache_job.py JOB OUT ARGS as two ranks of one node, as torchrun would
    start them (without its agent, to save a third interpreter); returns
    each rank's OUT.rank<r>.json."""
    port = free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2",
                   LOCAL_WORLD_SIZE="2", GROUP_RANK="0", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(HERE, "cache_job.py"), job, out, *args],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for p in procs:
        output, _ = p.communicate(timeout=120)
        assert p.returncode == 0, output[-3000:]
    return load_ranks(out, 2)


def test_a_dataset_cached_on_one_rank_only_does_not_shift_the_others(outdir):
    """Both datasets unnamed; rank 0 alone caches an evaluation set first:
    rank 1's training set must still meet rank 0's training set (it met the
    evaluation set's cache and read "VAL-0" for sample 0)."""
    ranks = run_node_ranks("pairing", os.path.join(outdir, "pairing"))
    assert [r["train0"] for r in ranks] == ["TRAIN-0", "TRAIN-0"]


@needs_redis
def test_a_full_redis_still_serves_what_it_holds(loaders):
    """A user's Redis under maxmemory with noeviction refuses writes (OOM)
    once full: the loader stops writing but keeps reading the entries it
    stored (a failed write used to stop reads for the retry interval too,
    so a full store gave no hits at all)."""
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no", "--maxmemory", "2mb",
                               "--maxmemory-policy", "noeviction"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loader = loaders("redis", hosts=[{"host": "127.0.0.1", "port": port}],
                             dataset_name="full", writer_buffer_size=1)
            def value(k):
                return torch.full((10_000,), float(k))
            for epoch in range(2):
                for k in range(60):  # 2.4 MB of values through 2 MB
                    assert torch.equal(loader.get(k, value), value(k))
        stats = loader.stats()
        assert stats["store_errors"] > 0, stats  # it did fill up
        assert stats["hits"] >= 20, stats  # the second epoch read what was stored
        assert any("new values are not stored" in str(w.message) for w in caught)
        loader.close()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_memory_backend_evicts_and_refuses_oversized_values(loaders):
    loader = loaders("memory", dataset_name="mev", capacity_per_node=256 << 10)
    for k in range(100):
        loader.get(k, lambda k: bytes(10_000))
    big = loader.get("big", lambda k: torch.zeros(1 << 20, dtype=torch.uint8))
    assert big.numel() == 1 << 20
    stats = loader.stats()
    assert stats["evictions"] > 0 and stats["rejected"] == 1
    assert stats["bytes"] <= 256 << 10


class Slow(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n
        self.loads = 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.loads += 1
        return torch.full((4, 4), i, dtype=torch.int32), i % 3


def test_memory_backend_with_dataloader_workers():
    ds = CachedDataset(Slow(96), backend="memory", dataset_name="workers",
                       capacity_per_node=32 << 20)
    loader = torch.utils.data.DataLoader(ds, batch_size=8, num_workers=2, shuffle=True)
    for epoch in range(2):
        seen = []
        for x, y in loader:
            assert torch.equal(x[:, 0, 0] % 3, y)
            seen += x[:, 0, 0].tolist()
        assert sorted(seen) == list(range(96))
        if epoch == 0:
            first = ds.stats()
    stats = ds.stats()  # counted in the workers, read here
    assert first["misses"] == 96 and first["hits"] == 0
    assert stats["hits"] == 96 and stats["misses"] == 96
    assert stats["entries"] == 96 and stats["store_errors"] == 0
    assert ds.dataset.loads == 0  # every load ran in a worker process


@needs_redis
def test_killing_redis_mid_epoch_falls_back_to_the_source(loaders):
    ds = CachedDataset(Slow(64), backend="redis", dataset_name="kill", writer_buffer_size=4,
                       capacity_per_node=16 << 20, timeout_s=2.0)
    server = ds.cache_loader.store.server_process
    loader = torch.utils.data.DataLoader(ds, batch_size=8)
    for _ in loader:  # epoch 1 fills the cache
        pass
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen = []
        for step, (x, y) in enumerate(loader):
            if step == 2:
                os.kill(server.pid, signal.SIGKILL)
            assert torch.equal(x[:, 0, 0] % 3, y)
            seen += x[:, 0, 0].tolist()
    assert sorted(seen) == list(range(64))
    store_warnings = [w for w in caught if "values come from the source" in str(w.message)]
    assert len(store_warnings) == 1
    stats = ds.stats()
    assert stats["store_errors"] >= 1 and stats["fallbacks"] == 64 - 24
    assert stats["hits"] == 24 and stats["evictions"] is None
    assert gone_within(server.pid)
    ds.cache_loader.close()


def test_two_processes_share_the_cache(outdir):
    """Two ranks of one node, as torchrun would start them (without its agent,
    to save a third interpreter)."""
    backends = ["memory", "redis"] if HAVE_REDIS else ["memory"]
    ranks = run_node_ranks("share", os.path.join(outdir, "share"), ",".join(backends))
    for backend in backends:
        writer, reader = ranks[0][backend], ranks[1][backend]
        assert writer["stats"]["misses"] == 64 and writer["stats"]["writes"] == 64
        assert reader["ok"] and reader["stats"]["hits"] == 64 and reader["stats"]["misses"] == 0
    if HAVE_REDIS:
        assert gone_within(ranks[0]["redis"]["server_pid"])


@needs_redis
def test_a_killed_job_leaves_no_server():
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "cache_job.py"), "crash"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()[-2000:]
    pids = json.loads(line)
    assert gone_within(pids["server"]) and gone_within(pids["watchdog"])
    assert pids["server"] not in redis_server_pids()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raw_command(port, *commands):
    """Sends RESP commands on a fresh connection; returns the raw answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        for args in commands:
            s.sendall(f"*{len(args)}\r\n".encode() +
                      b"".join(f"${len(a)}\r\n{a}\r\n".encode() for a in args))
        time.sleep(0.2)
        return s.recv(65536).decode(errors="replace")


@needs_redis
def test_the_started_server_is_private(loaders):
    loader = loaders("redis", dataset_name="priv", capacity_per_node=8 << 20)
    (host, port), = loader.store.servers
    password = loader.store._password
    assert host == "127.0.0.1" and len(password) == 64
    with open(f"/proc/{loader.store.server_process.pid}/cmdline", "rb") as f:
        assert password.encode() not in f.read()
    assert raw_command(port, ["GET", "x"]).startswith("-NOAUTH")
    with pytest.raises(PermissionError, match="needs a password"):
        CacheLoader("redis", hosts=[{"host": host, "port": port}])
    with pytest.raises(PermissionError, match="refused the password"):
        CacheLoader("redis", hosts=[{"host": host, "port": port}], password="wrong")
    # With the password: data commands, no administration.
    answer = raw_command(port, ["AUTH", password], ["CONFIG", "GET", "maxmemory"],
                         ["FLUSHALL"], ["DBSIZE"])
    assert answer.startswith("+OK") and answer.count("-NOPERM") == 2
    assert answer.rstrip().endswith(":0")  # DBSIZE answered
    info = _C.RedisShards.connect([(host, port)], password, 2.0).info("memory")[0]
    assert f"maxmemory:{8 << 20}" in info and "maxmemory_policy:allkeys-random" in info


def test_bad_input_is_named(loaders):
    with pytest.raises(ValueError, match="'mongo' is not one of"):
        CacheLoader("mongo")
    with pytest.raises(ValueError, match="writer_buffer_size must be an int >= 1, got 0"):
        CacheLoader("memory", writer_buffer_size=0)
    with pytest.raises(ValueError, match="capacity_per_node must be a positive"):
        CacheLoader("memory", capacity_per_node=-5)
    with pytest.raises(TypeError, match="backend='memory'.*hosts"):
        CacheLoader("memory", hosts=[{"host": "h", "port": 1}])
    with pytest.raises(ValueError, match="port in 1..65535"):
        CacheLoader("redis", hosts=[{"host": "127.0.0.1", "port": 0}])


@needs_redis
def test_unreachable_redis_host_is_named():
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(ConnectionError, match=f"127.0.0.1:{port}.*Connection refused"):
        CacheLoader("redis", hosts=[{"host": "127.0.0.1", "port": port}], timeout_s=2.0)
    assert time.monotonic() - t0 < 5
