"""The stores behind CacheLoader: the node's shared-memory cache
(backend="memory") and Redis servers sharded by key (backend="redis").

Both hand out raw bytes (`get_many` -> bytearray or None, `set_many`); the
value format is cache_codec's and the counting and fallback are
CacheLoader's. Both survive being sent to DataLoader workers: forked workers
inherit the shared memory, spawned ones attach it by path; a Redis
connection is made per process.
"""
import datetime
import json
import logging
import os

import torch.distributed as dist

from ... import _C
from .. import env

logger = logging.getLogger("bagua.cache")

DEFAULT_CAPACITY_PER_NODE = 107_374_182_400  # 100 GiB, the original's default


def job_store():
    """torch.distributed's store when the job is initialized, else None."""
    if dist.is_available() and dist.is_initialized():
        from ..process_group import _default_store

        return _default_store()
    return None


def node_count():
    return max(1, _world_size() // max(env.get_local_size(), 1))


def _world_size():
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return env.get_world_size()


def node_memory_bytes():
    """The memory this node's processes may use: MemTotal, bounded by the
    cgroup's limit (v2 memory.max or v1 memory.limit_in_bytes) when set."""
    total = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    total = int(line.split()[1]) * 1024
    except OSError:
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
            if text.isdigit() and (total is None or int(text) < total):
                total = int(text)
        except OSError:
            continue
    return total


def checked_capacity(capacity_per_node):
    """capacity_per_node checked, and bounded to half this node's memory (the
    original's 100 GiB default would let a cache push a smaller node into the
    OOM killer)."""
    if isinstance(capacity_per_node, bool) or not isinstance(capacity_per_node, int) \
            or capacity_per_node <= 0:
        raise ValueError(f"bagua cache: capacity_per_node must be a positive number of bytes, "
                         f"got {capacity_per_node!r}")
    memory = node_memory_bytes()
    if memory is not None and capacity_per_node > memory // 2:
        logger.info("bagua cache: capacity_per_node %d bytes bounded to half this node's "
                    "memory, %d bytes", capacity_per_node, memory // 2)
        return memory // 2
    return capacity_per_node


def share_per_node(namespace, make, attach):
    """Local rank 0 of each node calls make() -> (handle, published string);
    the other ranks of the node attach(published string) -> handle. Without
    a job store every process makes its own."""
    store = job_store()
    if store is None:
        return make()[0]
    key = f"{namespace}/node{env.get_node_rank()}"
    if env.get_local_rank() == 0:
        try:
            handle, published = make()
        except Exception as e:
            store.set(key, json.dumps({"error": f"{type(e).__name__}: {e}"}))
            raise
        store.set(key, json.dumps({"ok": published}))
        return handle
    timeout_s = env.number_from_env("BAGUA_TIMEOUT_S", 300.0, kind=float, minimum=1e-3)
    try:
        store.wait([key], datetime.timedelta(seconds=timeout_s))
    except Exception as e:  # torch's stores raise their own error types on a timeout
        raise TimeoutError(
            f"bagua cache: local rank 0 of node {env.get_node_rank()} made no cache "
            f"{namespace!r} within {timeout_s:g} s (BAGUA_TIMEOUT_S); every rank of a node must "
            "make its CacheLoaders and CachedDatasets of one dataset_name in the same order, "
            "local rank 0 included") from e
    got = json.loads(store.get(key))
    if "error" in got:
        raise RuntimeError(f"bagua cache: local rank 0 of node {env.get_node_rank()} could not "
                           f"set the cache up: {got['error']}")
    return attach(got["ok"])


class MemoryBackend:
    """The node's MemoryCache (runtime/data/memory_cache.h): made by local rank
    0, attached by the node's other ranks through the job's store and by
    spawned DataLoader workers through its path."""

    name = "memory"

    def __init__(self, namespace, capacity_per_node=DEFAULT_CAPACITY_PER_NODE, shards=None):
        capacity = checked_capacity(capacity_per_node)
        if shards is not None and (not isinstance(shards, int) or not 1 <= shards <= 256):
            raise ValueError(f"bagua cache: shards must be an int in 1..256, got {shards!r}")

        def make():
            cache = _C.MemoryCache.create(capacity, shards or 0)
            return cache, cache.attach_path

        def attach(path):
            try:
                return _C.MemoryCache.attach(path)
            except ValueError as e:  # another PID namespace, another user: a cache of our own
                logger.warning("bagua cache: cannot share local rank 0's memory cache (%s); "
                               "this process keeps its own", e)
                return make()[0]

        self._cache = share_per_node(namespace + "/memory", make, attach)

    def get_many(self, keys):
        return self._cache.get_many(keys)

    def set_many(self, items):
        return self._cache.put_many(items)

    def stats(self):
        s = self._cache.stats()
        return {"evictions": s["evictions"], "rejected": s["rejected"],
                "entries": s["entries"], "bytes": s["bytes"], "recoveries": s["recoveries"]}

    def num_keys(self):
        return self._cache.stats()["entries"]

    def close(self):
        pass

    def __getstate__(self):
        return {"path": self._cache.attach_path}

    def __setstate__(self, state):
        self._cache = _C.MemoryCache.attach(state["path"])


def parse_hosts(hosts):
    """[{"host": h, "port": p}, ...] (the original's form; "h:p" strings and
    (h, p) pairs too) -> [(h, int p)], with a clear error for anything else."""
    if isinstance(hosts, (str, dict)) or not hasattr(hosts, "__iter__"):
        raise ValueError(f"bagua cache: hosts must be a list of {{'host': ..., 'port': ...}}, "
                         f"got {hosts!r}")
    out = []
    for h in hosts:
        if isinstance(h, dict) and "host" in h and "port" in h:
            host, port = h["host"], h["port"]
        elif isinstance(h, str) and ":" in h:
            host, port = h.rsplit(":", 1)
        elif isinstance(h, (tuple, list)) and len(h) == 2:
            host, port = h
        else:
            raise ValueError(f"bagua cache: a Redis host must be {{'host': ..., 'port': ...}}, "
                             f"got {h!r}")
        try:
            port = int(port)
        except (TypeError, ValueError):
            port = -1
        if not str(host) or not 0 < port < 65536:
            raise ValueError(f"bagua cache: Redis host {h!r} needs a host name and a port in "
                             "1..65535")
        out.append((str(host), port))
    if not out:
        raise ValueError("bagua cache: hosts is empty; pass hosts=None to start servers")
    return out


class RedisBackend:
    """Redis servers, given (`hosts`) or started here, one per node
    (redis_server.py). With cluster_mode keys are spread over all of them by
    hash; without, each node uses hosts[node_rank % len(hosts)]."""

    name = "redis"

    def __init__(self, namespace, hosts=None, cluster_mode=True,
                 capacity_per_node=DEFAULT_CAPACITY_PER_NODE, password=None, timeout_s=5.0,
                 eviction_policy="allkeys-random", bind_address=None):
        if not _C.RedisShards.available():
            _C.RedisShards.connect([("127.0.0.1", 6379)])  # raises, saying how to get it
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) \
                or not timeout_s > 0:
            raise ValueError(f"bagua cache: timeout_s must be a positive number, got {timeout_s!r}")
        self._timeout_s = float(timeout_s)
        self._server = None
        if hosts is None:
            from .redis_server import start_node_servers

            self._server, servers, password = start_node_servers(
                namespace + "/redis", checked_capacity(capacity_per_node), eviction_policy,
                self._timeout_s, bind_address)
        else:
            servers = parse_hosts(hosts)
            if password is not None and not isinstance(password, str):
                raise ValueError("bagua cache: password must be a str")
        if not cluster_mode:
            servers = [servers[env.get_node_rank() % len(servers)]]
        self._servers = servers
        self._password = password or ""
        self._pid = None
        self._client = None
        self._connect()  # here, so that a bad host or password fails at construction

    @property
    def servers(self):
        return list(self._servers)

    @property
    def server_process(self):
        """The redis-server this process started (a GuardedProcess), or None."""
        return self._server

    def _connect(self):
        self._client = None
        self._client = _C.RedisShards.connect(self._servers, self._password, self._timeout_s)
        self._pid = os.getpid()

    def _here(self):
        if self._pid != os.getpid() or self._client is None:
            self._connect()  # a new process (DataLoader worker), or after a failure
        return self._client

    def get_many(self, keys):
        try:
            return self._here().get_many(keys)
        except Exception:
            self._client = None
            raise

    def set_many(self, items):
        try:
            self._here().set_many(items)
        except Exception:
            self._client = None
            raise
        return len(items)

    def stats(self):
        client = self._here()
        evicted = used = 0
        for text in client.info("stats") + client.info("memory"):
            for line in text.splitlines():
                name, _, value = line.partition(":")
                if name == "evicted_keys":
                    evicted += int(value)
                elif name == "used_memory":
                    used += int(value)
        return {"evictions": evicted, "entries": sum(client.key_counts()), "bytes": used}

    def num_keys(self):
        return sum(self._here().key_counts())

    def close(self):
        self._client = None
        if self._server is not None:
            self._server.stop()

    def __getstate__(self):
        state = dict(self.__dict__)
        state.update(_client=None, _pid=None, _server=None)  # the starter alone stops it
        return state
