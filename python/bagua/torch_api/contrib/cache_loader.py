"""CacheLoader: a read-through cache of values keyed by
"{dataset_name}_{key}", in the node's memory (backend="memory") or in Redis
(backend="redis"). CachedDataset is the case of a map-style dataset.

Counting (`stats()`), shared by the process that made the loader and its
DataLoader workers: hits, misses, writes, pickled (values stored through the
pickle fallback), store_errors, fallbacks (values loaded from the source
because the store had failed), dropped_writes; and from the store:
evictions, entries, bytes (and rejected, for values larger than a memory
shard). A store that fails (a dead Redis) is reported once with a warning;
values then come from the source and training goes on; the store is tried
again after `retry_interval_s`.
"""
import atexit
import multiprocessing.util
import os
import time
import warnings

from ... import _C
from . import cache_codec
from .cache_backends import MemoryBackend, RedisBackend

__all__ = ["CacheLoader"]

_COUNTERS = ("hits", "misses", "writes", "pickled", "store_errors", "fallbacks",
             "dropped_writes", "warned")
_INDEX = {name: i for i, name in enumerate(_COUNTERS)}
_BACKENDS = {"memory": MemoryBackend, "redis": RedisBackend}
_instances = {}


class CacheLoader:
    def __init__(self, backend="redis", dataset_name="", writer_buffer_size=1, **kwargs):
        """A mapping from keys to values that loads a value (`load_fn`) the
        first time it is asked for, then serves it from the cache.

        Args:
            backend: "redis" (servers given by `hosts`, or one started per
                node) or "memory" (the node's shared memory).
            dataset_name: prefix of the keys ("{dataset_name}_{key}"); caches
                with the same name share entries.
            writer_buffer_size: values collected per process before one
                batched write (Redis; the memory backend writes at once).
            **kwargs: capacity_per_node (bytes, both backends; bounded to
                half the node's memory); retry_interval_s (30); Redis:
                hosts, cluster_mode (True), password, timeout_s (5),
                eviction_policy ("allkeys-random"), bind_address; memory:
                shards.
        """
        if backend not in _BACKENDS:
            raise ValueError(f"bagua CacheLoader: backend {backend!r} is not one of "
                             f"{', '.join(map(repr, _BACKENDS))}")
        if isinstance(writer_buffer_size, bool) or not isinstance(writer_buffer_size, int) \
                or writer_buffer_size < 1:
            raise ValueError(f"bagua CacheLoader: writer_buffer_size must be an int >= 1, got "
                             f"{writer_buffer_size!r}")
        retry = kwargs.pop("retry_interval_s", 30.0)
        if isinstance(retry, bool) or not isinstance(retry, (int, float)) or retry < 0:
            raise ValueError(f"bagua CacheLoader: retry_interval_s must be >= 0, got {retry!r}")
        self.backend = backend
        self.dataset_name = str(dataset_name)
        self.writer_buffer_size = writer_buffer_size
        self._retry_interval_s = float(retry)
        self._prefix = f"{self.dataset_name}_"
        # Every rank makes its loaders in the same order: the n-th loader of
        # a name meets the n-th loader of the same name on the other ranks.
        # A CachedDataset adds its dataset's type and length, so that a
        # loader only one rank makes (an evaluation set) shifts no other
        # dataset's pairing, and a mismatch waits (and then fails, naming
        # it) instead of reading another dataset's samples.
        tag = kwargs.pop("_pairing_tag", "")
        key = (backend, self.dataset_name, tag)
        ordinal = _instances[key] = _instances.get(key, -1) + 1
        namespace = f"bagua/cache/{backend}/{self.dataset_name}/{ordinal}" + \
            (f"/{tag}" if tag else "")
        try:
            self.store = _BACKENDS[backend](namespace, **kwargs)
        except TypeError as e:
            raise TypeError(f"bagua CacheLoader(backend={backend!r}): {e}") from e
        self._counters = _C.SharedCounters.create(len(_COUNTERS))
        self._local_state()
        # Registered after the store's own exit handler (a started server's
        # stop), so it runs first: buffered values are written, then the
        # server stops.
        atexit.register(self.close)

    def _local_state(self):
        """What each process keeps for itself: its write buffer and retry time."""
        self._pid = os.getpid()
        self._pending = {}
        self._retry_at = 0.0  # the store failed: neither read nor written until then
        self._write_retry_at = 0.0  # a write failed (a full store): not written until then
        self._finalizer = None
        self._closing = False

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_pending", "_finalizer", "_counters", "_closing")}
        state["_counters_path"] = self._counters.attach_path
        return state

    def __setstate__(self, state):
        path = state.pop("_counters_path")
        self.__dict__.update(state)
        self._counters = _C.SharedCounters.attach(path)
        self._local_state()

    def _count(self, name, n=1):
        return self._counters.add(_INDEX[name], n) if n else 0

    def _here(self):
        if self._pid != os.getpid():  # a forked DataLoader worker: start clean
            self._local_state()

    def get(self, key, load_fn):
        """The value of `key`: from the cache, else `load_fn(key)` (then cached)."""
        return self.get_many([key], lambda keys: [load_fn(k) for k in keys])[0]

    def get_many(self, keys, load_many_fn):
        """Values of `keys` in order, with one batched read of the store;
        `load_many_fn(missing_keys)` returns the values of the misses."""
        self._here()
        keys = list(keys)
        names = [f"{self._prefix}{k}" for k in keys]
        values = [None] * len(keys)
        missing = []
        lookup = []
        for i, name in enumerate(names):
            if name in self._pending:
                values[i] = cache_codec.decode(bytearray(self._pending[name]))
                self._count("hits")
            else:
                lookup.append(i)
        raw = self._read([names[i] for i in lookup]) if lookup else []
        store_up = raw is not None
        for j, i in enumerate(lookup):
            record = raw[j] if store_up else None
            if record is not None:
                try:
                    values[i] = cache_codec.decode(record)
                    self._count("hits")
                    continue
                except ValueError as e:
                    self._store_failed(e, retry=False)
            missing.append(i)
        if missing:
            self._count("misses" if store_up else "fallbacks", len(missing))
            loaded = load_many_fn([keys[i] for i in missing])
            for i, value in zip(missing, loaded):
                values[i] = value
                if store_up:
                    self._write(names[i], value)
        return values

    def _usable(self):
        return time.monotonic() >= self._retry_at

    def _read(self, names):
        if not self._usable():
            return None
        try:
            return self.store.get_many(names)
        except Exception as e:  # the store is gone or broken: serve from the source
            self._store_failed(e)
            return None

    def _write(self, name, value):
        record, pickled = cache_codec.encode(value)
        if pickled:
            self._count("pickled")
        if self.backend == "memory":
            self._flush_items([(name, record)])
            return
        self._pending[name] = record
        if self._finalizer is None:  # DataLoader workers leave through multiprocessing's exit
            self._finalizer = multiprocessing.util.Finalize(None, self.flush, exitpriority=10)
        if len(self._pending) >= self.writer_buffer_size:
            self.flush()

    def flush(self):
        """Writes this process's buffered values (one batched write)."""
        if self._pid != os.getpid() or not self._pending:
            return
        items = list(self._pending.items())
        self._pending.clear()
        self._flush_items(items)

    def _flush_items(self, items):
        if not self._usable() or time.monotonic() < self._write_retry_at:
            self._count("dropped_writes", len(items))
            return
        try:
            self.store.set_many(items)
            self._count("writes", len(items))
        except Exception as e:
            # A full store (Redis OOM under noeviction) still serves what it
            # holds: only writing pauses. A dead one fails the next read too.
            self._store_failed(e, writing=True)
            self._count("dropped_writes", len(items))

    def _store_failed(self, error, retry=True, writing=False):
        self._count("store_errors")
        if retry:
            until = time.monotonic() + self._retry_interval_s
            if writing:
                self._write_retry_at = until
            else:
                self._retry_at = until
            self._count("dropped_writes", len(self._pending))
            self._pending.clear()
        if self._closing:  # at exit another rank may have stopped the server first
            return
        if self._count("warned") == 0:  # once for the loader and all its workers
            what = ("new values are not stored (what it holds is still read)" if writing else
                    "values come from the source dataset instead")
            warnings.warn(
                f"bagua cache ({self.backend}, dataset_name={self.dataset_name!r}): the store "
                f"failed ({type(error).__name__}: {error}); {what} (retrying the store every "
                f"{self._retry_interval_s:g} s). cache.stats() counts store_errors and "
                "fallbacks.",
                RuntimeWarning, stacklevel=4)

    def stats(self):
        """Counters of this loader and its DataLoader workers, and the store's
        (evictions, entries, bytes; None when the store cannot be reached)."""
        out = {name: self._counters.get(i) for i, name in enumerate(_COUNTERS) if name != "warned"}
        try:
            out.update(self.store.stats())
        except Exception:
            out.update(evictions=None, entries=None, bytes=None)
        return out

    def num_keys(self):
        """Number of keys in the store (all datasets sharing it)."""
        return self.store.num_keys()

    def close(self):
        """Flushes, and stops the Redis server this process started (also done
        at exit)."""
        if self._pid == os.getpid():
            self._closing = True
            self.flush()
            self.store.close()
