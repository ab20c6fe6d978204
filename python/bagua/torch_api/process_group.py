"""Process groups of the original API on the runtime's communicators.

`init_process_group()` joins the job (torch.distributed's env:// rendezvous,
as torchrun or `python -m bagua.distributed.launch` set it up) and creates
the default `BaguaProcessGroup`; `new_group(ranks)` and
`from_torch_group(group)` make more. A group has three communicators, as in
the original: "global" (its ranks), "intra" (its ranks on my node) and
"inter" (its ranks with my local rank, one per node). Each communicator
holds the runtime's Gloo communicator for CPU tensors and an NCCL one per
CUDA device, created on first use by all its members together (the first
operation on a communicator is collective, even a send; members that do not
join in time get a TimeoutError that says so).
"""
import atexit
import datetime
import hashlib
import os
import weakref

import torch
import torch.distributed as dist

from . import env

_state = {"default": None, "store": None, "groups": 0,
          # Runtime communicators created so far per store prefix: a prefix
          # used again (a communicator released and created anew, an engine
          # rebuilding its hierarchy) gets a new number, so its rendezvous
          # never reads the previous one's keys (peer addresses, NCCL ids).
          # Every member creates its communicators in the same order.
          "created": {},
          # What to release at exit, before torch's group: every engine and
          # communicator this process made (weak: they may go earlier).
          "engines": weakref.WeakSet(), "communicators": weakref.WeakSet()}


def _global_rank():
    return dist.get_rank() if dist.is_initialized() else env.get_rank()


def _world_size():
    return dist.get_world_size() if dist.is_initialized() else env.get_world_size()


def _shutdown_nccl_at_exit():
    """Registers (once) the runtime's ordered destruction of its NCCL
    communicators at exit: left to the garbage collector, ranks destroy
    them in different orders, and ranks of one host then wait for each
    other forever (runtime/comm/nccl_communicator.h)."""
    if not _state.get("shutdown_registered"):
        from .. import _C

        atexit.register(_C.shutdown_nccl)
        _state["shutdown_registered"] = True


def _timeout_s():
    """Seconds an operation may wait for its peers (BAGUA_TIMEOUT_S, default 300)."""
    return env.number_from_env("BAGUA_TIMEOUT_S", 300.0, kind=float, minimum=1e-3)


def _store_prefix(group_name, kind, device):
    """Where the ranks of a communicator meet in the store. The device type
    only, never its index: ranks on different GPUs must meet under one key."""
    return f"bagua/pg/{group_name}/{kind}/{device.type}"


def _device_key(device):
    """What a group's runtime communicators are kept by (plus "background")."""
    return (device.type, device.index if device.type == "cuda" else None)


class BaguaCommunicator:
    """The ranks of one communicator and the runtime's communicators over them.

    `rank()` and `nranks()` are this process's place in it (`rank()` is -1
    for a process outside it). Collectives take it as `comm=`.
    """

    def __init__(self, group, kind, ranks):
        self.group = group
        self.kind = kind
        self.ranks = list(ranks)
        me = _global_rank()
        self._rank = self.ranks.index(me) if me in self.ranks else -1
        self._backends = {}
        _state["communicators"].add(self)

    def rank(self):
        return self._rank

    def _store_kind(self):
        """The kind, and for the per-node kinds the ranks: each node's intra
        communicator (and each position's inter one) meets under its own key
        (one key for all of them paired ranks of different nodes: wrong sums)."""
        if self.kind == "global":
            return self.kind
        ranks = "-".join(str(r) for r in self.ranks)
        if len(ranks) > 64:
            ranks = hashlib.sha1(ranks.encode()).hexdigest()[:16]
        return f"{self.kind}/{ranks}"

    def nranks(self):
        return len(self.ranks)

    def __repr__(self):
        return f"BaguaCommunicator({self.group.group_name}/{self.kind}, ranks={self.ranks})"

    def bytes_sent(self, device):
        """Bytes this rank sent through the group's runtime communicators for
        `device` (the background one too, where made)."""
        return sum(backend.bytes_sent for key, (backend, _) in self._backends.items()
                   if key[:2] == _device_key(device))

    def release(self):
        """Drops the runtime communicators (created again on next use)."""
        self._backends.clear()

    def backend(self, device, background=False):
        """The runtime communicator (bagua._C.ProcessGroup) for `device`.
        `background=True`: a second NCCL communicator of the same ranks for
        exchanges that run beside training for many steps (DiLoCo): its
        kernels hold few SMs (runtime/comm/nccl_communicator.h). On a CPU
        device it is the group's one communicator."""
        from .. import _C

        if self._rank < 0:
            raise ValueError(f"rank {_global_rank()} is not a member of {self!r}")
        background = bool(background) and device.type == "cuda"
        key = _device_key(device)
        if background:
            key = key + ("background",)
        if key not in self._backends:
            prefix = _store_prefix(self.group.group_name, self._store_kind(), device)
            if background:
                prefix += "/background"
            count = _state["created"][prefix] = _state["created"].get(prefix, 0) + 1
            if count > 1:
                prefix = f"{prefix}#{count}"
            store = _C.CallbackStore(_default_store())
            try:
                if device.type == "cuda":
                    from .. import _nccl

                    _nccl.check()
                    _shutdown_nccl_at_exit()
                    index = device.index if device.index is not None else torch.cuda.current_device()
                    backend = _C.ProcessGroup.nccl(store, self._rank, self.nranks(), index,
                                                   prefix=prefix, timeout_s=_timeout_s(),
                                                   background=background)
                elif device.type == "cpu":
                    backend = _cpu_group(prefix, store, self._rank, self.nranks())
                else:
                    raise ValueError(f"bagua communicates CPU and CUDA tensors, not {device.type}")
            except TimeoutError as error:
                raise TimeoutError(
                    f"creating the {device.type} communicator of {self!r} timed out: its first "
                    f"operation must be entered by all {self.nranks()} members ({error})"
                ) from error
            self._backends[key] = (backend, store)
        return self._backends[key][0]


class BaguaProcessGroup:
    """A set of ranks (global rank numbers, sorted) and its communicators."""

    def __init__(self, ranks, stream, group_name):
        self.ranks = sorted(ranks)
        # Kept for the original's signature: the runtime orders its CUDA work
        # on the caller's current stream (its NCCL stream waits for it).
        self.stream = stream
        self.group_name = group_name
        self._comms = {}

    def __repr__(self):
        return f"BaguaProcessGroup({self.group_name}, ranks={self.ranks})"

    def _comm(self, kind, ranks):
        if kind not in self._comms:
            self._comms[kind] = BaguaCommunicator(self, kind, ranks)
        return self._comms[kind]

    def get_global_communicator(self):
        return self._comm("global", self.ranks)

    def get_intra_node_communicator(self):
        """My group's ranks on my node."""
        nodes = _node_of_ranks()
        mine = nodes[_global_rank()]
        return self._comm("intra", [r for r in self.ranks if nodes[r] == mine])

    def get_inter_node_communicator(self):
        """One rank per node: those of my group with my place on their node."""
        nodes = _node_of_ranks()
        position = {}
        for r in self.ranks:
            position[r] = sum(1 for q in self.ranks if q < r and nodes[q] == nodes[r])
        me = position.get(_global_rank(), -1)
        return self._comm("inter", [r for r in self.ranks if position[r] == me])


def cpu_collectives():
    """Where CPU groups run: "libgloo" (the runtime's Gloo communicator) when
    this build has it, else "torch" (torch's own Gloo process group);
    BAGUA_CPU_COLLECTIVES=torch|libgloo chooses."""
    from .. import _C

    wanted = os.environ.get("BAGUA_CPU_COLLECTIVES", "")
    if wanted not in ("", "torch", "libgloo"):
        raise ValueError(f"bagua: BAGUA_CPU_COLLECTIVES={wanted!r}: expected 'torch' or 'libgloo'")
    if wanted == "libgloo" and not _C.has_gloo():
        raise RuntimeError("bagua: BAGUA_CPU_COLLECTIVES=libgloo, but this build has no libgloo "
                           "(install libgloo-dev and reinstall bagua, or unset it to use torch's "
                           "Gloo)")
    if wanted:
        return wanted
    return "libgloo" if _C.has_gloo() else "torch"


def _cpu_group(prefix, store, rank, size):
    from .. import _C

    iface = os.environ.get("GLOO_SOCKET_IFNAME", "")
    if cpu_collectives() == "libgloo":
        return _C.ProcessGroup.gloo(store, rank, size, prefix=prefix, iface=iface,
                                    timeout_s=_timeout_s())
    from ._torch_gloo import TorchGlooBackend

    backend = TorchGlooBackend(_default_store(), prefix, rank, size, _timeout_s(), iface)
    return _C.ProcessGroup.torch_gloo(backend, rank, size, timeout_s=_timeout_s())


def _node_of_ranks():
    """Node number of every global rank (published once through the store)."""
    if "nodes" not in _state:
        store = _default_store()
        store.set(f"bagua/node_of/{_global_rank()}", str(env.get_node_rank()))
        _state["nodes"] = [int(store.get(f"bagua/node_of/{r}")) for r in range(_world_size())]
    return _state["nodes"]


def _default_store():
    if _state["store"] is None:
        if not dist.is_initialized():
            raise RuntimeError("bagua: call bagua.torch_api.init_process_group() first")
        _state["store"] = _attempt_scoped(dist.distributed_c10d._get_default_store())
    return _state["store"]


def is_initialized():
    return _state["default"] is not None


def init_process_group(store=None, rank=-1, world_size=-1, local_world_size=-1):
    """Joins the job and creates the default process group.

    Without arguments the job comes from the launcher's environment (RANK,
    WORLD_SIZE, MASTER_ADDR, MASTER_PORT...). With a `store` (a
    torch.distributed Store), `rank`, `world_size` and `local_world_size` are
    required. torch.distributed is initialised too if it is not yet: Gloo
    for CPU tensors, plus NCCL for CUDA tensors where CUDA is available.
    """
    if _state["default"] is not None:
        raise RuntimeError("bagua: init_process_group() was already called in this process")
    if store is not None:
        for name, value in (("rank", rank), ("world_size", world_size),
                            ("local_world_size", local_world_size)):
            if value < (0 if name == "rank" else 1):
                raise ValueError(f"bagua: init_process_group(store=...) needs {name}, got {value}")
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size),
                          LOCAL_RANK=str(rank % local_world_size),
                          LOCAL_WORLD_SIZE=str(local_world_size))
    if not dist.is_initialized():
        # Ours to tear down at exit: a process that exits with torch's
        # process group alive can abort in its threads' teardown ("terminate
        # called without an active exception", seen under load).
        atexit.register(_shutdown)
        backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"
        timeout = datetime.timedelta(seconds=_timeout_s())
        if store is not None:
            dist.init_process_group(backend, store=store, rank=rank, world_size=world_size,
                                    timeout=timeout)
        else:
            for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
                if name not in os.environ:
                    raise RuntimeError(
                        f"bagua: {name} is not set; start the script with torchrun or "
                        "`python -m bagua.distributed.launch`, or pass store, rank, world_size "
                        "and local_world_size to init_process_group()")
            attempt_store = _elastic_attempt_store(timeout)
            if attempt_store is not None:
                store = attempt_store
                dist.init_process_group(backend, store=store, rank=env.get_rank(),
                                        world_size=env.get_world_size(), timeout=timeout)
            else:
                dist.init_process_group(backend, timeout=timeout)
    if dist.get_world_size() != env.get_world_size() or dist.get_rank() != env.get_rank():
        os.environ.update(RANK=str(dist.get_rank()), WORLD_SIZE=str(dist.get_world_size()))
    _state["store"] = (store if store is not None
                       else _attempt_scoped(dist.distributed_c10d._get_default_store()))
    stream = torch.cuda.Stream(priority=-1) if torch.cuda.is_available() else None
    _state["default"] = new_group(stream=stream)


def _attempt_prefix():
    """The key prefix of this torchrun attempt, where one store outlives the
    restarts (TORCHELASTIC_USE_AGENT_STORE=True: the static rendezvous, or
    c10d sharing its store with the workers) and torch prefixes nothing: a
    restarted attempt read the keys the last one left (peer addresses, NCCL
    ids) and hung (pytorch/pytorch#135712). None where torch makes a store
    per round itself.

    Only one agent's restart count is a generation every rank agrees on:
    with several nodes each agent counts its own restarts (one whose workers
    did not fail, or that restarts for a joining node, keeps its count), so
    there a restart is refused with what to use instead, as a hang would be
    the alternative."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return None
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if int(os.environ.get("GROUP_WORLD_SIZE", "1")) <= 1:
        return f"/bagua/attempt_{attempt}"
    restarts = int(os.environ.get("TORCHELASTIC_MAX_RESTARTS", "0"))
    if restarts == 0 and attempt == 0:
        return None
    message = (
        "torchrun shares one store across restarts between several nodes (the static "
        "rendezvous, or c10d with TORCHELASTIC_USE_AGENT_STORE=True), and each node counts its "
        "own restarts, so restarted workers cannot tell this attempt's keys from the last one's "
        "(pytorch/pytorch#135712); for restarts across nodes use --rdzv-backend=c10d "
        "--rdzv-endpoint=HOST:PORT with TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (python -m "
        "bagua.distributed.run sets it)")
    if attempt > 0:
        raise RuntimeError(f"bagua: restart {attempt}: {message}")
    if not _state.get("restart_warned"):
        _state["restart_warned"] = True
        import warnings

        warnings.warn(f"bagua: --max-restarts={restarts}: {message}", RuntimeWarning,
                      stacklevel=4)
    return None


def _attempt_scoped(store):
    """torch.distributed's store, initialised by someone else (Lightning):
    the runtime's own keys get this attempt's prefix (_attempt_prefix)."""
    prefix = _attempt_prefix()
    return store if prefix is None else dist.PrefixStore(prefix, store)


def _elastic_attempt_store(timeout):
    """A store for torch.distributed and the runtime with this attempt's
    prefix (_attempt_prefix), or None."""
    prefix = _attempt_prefix()
    if prefix is None:
        return None
    agent = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                          env.get_world_size(), is_master=False, timeout=timeout)
    return dist.PrefixStore(prefix, agent)


def register_engine(engine):
    """Engines are closed at exit (their threads joined) before torch's group."""
    _state["engines"].add(engine)


def _shutdown():
    """At exit, while the interpreter is whole: close the engines (hooks off,
    background threads stopped), release the runtime's communicators (their
    worker threads joined), then destroy torch's group."""
    for engine in list(_state["engines"]):
        engine.close()
    for comm in list(_state["communicators"]):
        comm.release()
    _state["default"] = None
    if dist.is_initialized():
        dist.destroy_process_group()


def _get_default_group():
    """The default group; created on first use when torch.distributed was
    initialised by someone else (torchrun + init_process_group, Lightning)."""
    if _state["default"] is None:
        if not dist.is_initialized():
            raise RuntimeError(
                "bagua: call bagua.torch_api.init_process_group() first (or initialise "
                "torch.distributed)")
        stream = torch.cuda.Stream(priority=-1) if torch.cuda.is_available() else None
        _state["default"] = new_group(stream=stream)
    return _state["default"]


def new_group(ranks=None, stream=None):
    """A process group of `ranks` (global ranks; None: all). Every process of
    the job must call it, in the same order, even those not in `ranks`."""
    world = _world_size()
    if ranks is None:
        ranks = list(range(world))
    ranks = sorted(int(r) for r in ranks)
    for r in ranks:
        if r < 0 or r >= world:
            raise ValueError(f"bagua: new_group: rank {r} is outside the job's 0..{world - 1}")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"bagua: new_group: ranks {ranks} repeat a rank")
    if not ranks:
        raise ValueError("bagua: new_group: no ranks given")
    _state["groups"] += 1
    if stream is None and _state["default"] is not None:
        stream = _state["default"].stream
    return BaguaProcessGroup(ranks, stream, str(_state["groups"]))


def from_torch_group(group, stream=None):
    """The Bagua process group with the ranks of torch.distributed group `group`.
    Every process of the job must call it, in the same order."""
    if group is None or group is dist.group.WORLD:
        return new_group(None, stream)
    try:
        ranks = dist.get_process_group_ranks(group)
    except (RuntimeError, ValueError):
        # This process is not in `group`: learn its ranks through the store.
        ranks = None
    key = f"bagua/from_torch/{_state['groups'] + 1}"
    store = _default_store()
    if ranks is not None and dist.get_rank(group) == 0:
        store.set(key, ",".join(map(str, ranks)))
    if ranks is None:
        ranks = [int(r) for r in store.get(key).decode().split(",")]
    return new_group(ranks, stream)
