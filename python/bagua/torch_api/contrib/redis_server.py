"""The redis-server a job starts for its cache when no hosts are given: one
per node, started by local rank 0.

- Bound to loopback and, in a job of several nodes, to the address this node
  reaches MASTER_ADDR from; protected mode on; a password of 256 random bits
  made by rank 0 and shared through the job's store, so that only the job's
  processes (and whoever can read that store) connect.
- The configuration, password included, goes through the server's stdin:
  nothing secret on a command line or in a file.
- maxmemory = capacity_per_node, eviction `eviction_policy` (allkeys-random,
  the original's, by default); no persistence (no RDB, no AOF; its working
  directory is a private temporary one, removed at the end).
- Stopped when the job ends (atexit) and, on a crash, by its watchdog
  (_C.GuardedProcess): it never outlives the process that started it.
"""
import atexit
import json
import os
import secrets
import shutil
import socket
import tempfile
import time

from ... import _C
from .. import env
from .cache_backends import job_store, node_count

_EVICTION_POLICIES = ("allkeys-random", "allkeys-lru", "allkeys-lfu", "volatile-lru",
                      "volatile-random", "volatile-lfu", "volatile-ttl", "noeviction")
_START_ATTEMPTS = 3


class LocalRedisServer:
    """One redis-server under a watchdog, its log and its directory."""

    def __init__(self, bind, password, capacity, eviction_policy, timeout_s):
        if shutil.which("redis-server") is None:
            raise FileNotFoundError(
                "bagua cache: backend='redis' without hosts starts redis-server, which is not "
                "installed (Debian/Ubuntu: apt-get install redis-server), or pass "
                "hosts=[{'host': ..., 'port': ...}] of running servers")
        self._owner = os.getpid()
        self.dir = tempfile.mkdtemp(prefix="bagua-redis-")  # mode 0700
        self.host = bind[-1]
        self._process = None
        last_log = ""
        for _ in range(_START_ATTEMPTS):
            self.port = _free_port(self.host)
            config = "\n".join([
                f"bind {' '.join(bind)}",
                f"port {self.port}",
                "protected-mode yes",
                # The password, and no administrative commands (CONFIG, DEBUG,
                # SHUTDOWN, REPLICAOF, KEYS, FLUSHALL...) even with it.
                f"user default on >{password} ~* &* +@all -@dangerous +info +dbsize",
                f"maxmemory {capacity}",
                f"maxmemory-policy {eviction_policy}",
                'save ""',
                "appendonly no",
                f"dir {self.dir}",
                "daemonize no",
                "databases 1",
                'logfile ""',
                "loglevel warning",
            ]) + "\n"
            log = os.path.join(self.dir, "redis.log")
            self._process = _C.GuardedProcess(["redis-server", "-"], config, log)
            if self._wait_ready(password, timeout_s):
                return
            last_log = _tail(log)
            self._process.stop()
            if "Address already in use" not in last_log:
                break
        self.stop()
        raise RuntimeError(f"bagua cache: redis-server did not start on {self.host}; its log "
                           f"ends with:\n{last_log}")

    @property
    def pid(self):
        return self._process.pid if self._process is not None else None

    def _wait_ready(self, password, timeout_s):
        deadline = time.monotonic() + max(timeout_s, 10.0)
        while time.monotonic() < deadline:
            if not self._process.running():
                return False
            try:
                _C.RedisShards.connect([(self.host, self.port)], password, 1.0)
                return True
            except ConnectionError:
                time.sleep(0.01)
        return False

    def running(self):
        return self._process is not None and self._process.running()

    def stop(self):
        """Kills and reaps the server, removes its directory (in the process
        that started it; a no-op in forked DataLoader workers)."""
        if os.getpid() != self._owner:
            return
        if self._process is not None:
            self._process.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def _free_port(host):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _tail(path, lines=20):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"


def node_address():
    """The address this node reaches MASTER_ADDR from (no packet is sent)."""
    master = env.get_master_addr()
    try:
        info = socket.getaddrinfo(master, 1, type=socket.SOCK_DGRAM)[0]
        with socket.socket(info[0], socket.SOCK_DGRAM) as s:
            s.connect(info[4])
            return s.getsockname()[0]
    except OSError as e:
        raise RuntimeError(f"bagua cache: cannot find this node's address towards MASTER_ADDR "
                           f"{master!r} ({e}); pass bind_address=...") from e


def start_node_servers(namespace, capacity, eviction_policy, timeout_s, bind_address=None):
    """Starts this node's server (on local rank 0) and returns (the server or
    None, [(host, port)] of every node's server, the password)."""
    if eviction_policy not in _EVICTION_POLICIES:
        raise ValueError(f"bagua cache: eviction_policy {eviction_policy!r} is not one of "
                         f"{', '.join(_EVICTION_POLICIES)}")
    store = job_store()
    nodes = node_count() if store is not None else 1
    if store is None:
        password = secrets.token_hex(32)
    elif _rank() == 0:
        password = secrets.token_hex(32)
        store.set(f"{namespace}/password", password)
    else:
        password = store.get(f"{namespace}/password").decode()
    bind = ["127.0.0.1"]
    if nodes > 1:
        address = bind_address or node_address()
        if address not in bind:
            bind.append(address)
    server = None
    if store is None or env.get_local_rank() == 0:
        try:
            server = LocalRedisServer(bind, password, capacity, eviction_policy, timeout_s)
        except Exception as e:
            if store is not None:
                store.set(f"{namespace}/node{env.get_node_rank()}",
                          json.dumps({"error": f"{type(e).__name__}: {e}"}))
            raise
        atexit.register(server.stop)
        if store is not None:
            store.set(f"{namespace}/node{env.get_node_rank()}",
                      json.dumps({"host": server.host, "port": server.port}))
    if store is None:
        return server, [(server.host, server.port)], password
    servers = []
    for node in range(nodes):
        got = json.loads(store.get(f"{namespace}/node{node}"))
        if "error" in got:
            raise RuntimeError(f"bagua cache: node {node}'s redis-server did not start: "
                               f"{got['error']}")
        servers.append((got["host"], got["port"]))
    return server, servers, password


def _rank():
    import torch.distributed as dist

    return dist.get_rank()
