"""The original's communication primitives on the runtime's communicators.

Every function takes the original's arguments; `comm` is a communicator
from `group.get_global_communicator()` (or a BaguaProcessGroup, meaning its
global communicator; None: the default group's). Roots and peers (`src`,
`dst`) are ranks inside that communicator. A process outside `comm` returns
at once, as in the original.

CUDA tensors go through NCCL, ordered on the caller's current CUDA stream:
the call returns before the data has moved, like any CUDA operation, and
later work on that stream sees the result. CPU tensors go through Gloo and
the call returns when done. Every call checks its tensors (type, device,
dtype, contiguity, sizes) and raises ValueError naming the argument. On CPU
it also checks, with one small exchange, that every rank called the same
primitive with the same dtype, element count and root, so a mismatch is a
ValueError naming the ranks instead of a hang or a wrong result; for CUDA
tensors that check needs a host synchronisation and runs only with
BAGUA_COMM_CHECK=1 (otherwise a mismatch ends in the communicator's
TimeoutError, BAGUA_TIMEOUT_S).
"""
import os
from enum import IntEnum

import torch

from .process_group import BaguaCommunicator, BaguaProcessGroup, _get_default_group


class ReduceOp(IntEnum):
    """Reductions, with the original's values."""

    SUM = 0
    PRODUCT = 1
    MIN = 2
    MAX = 3
    BOR = 7
    BAND = 8
    BXOR = 9
    AVG = 10


_OP_NAMES = {ReduceOp.SUM: "sum", ReduceOp.PRODUCT: "product", ReduceOp.MIN: "min",
             ReduceOp.MAX: "max", ReduceOp.BOR: "bor", ReduceOp.BAND: "band",
             ReduceOp.BXOR: "bxor", ReduceOp.AVG: "avg"}
_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
           torch.float64: "float64", torch.int8: "int8", torch.uint8: "uint8",
           torch.int32: "int32", torch.int64: "int64"}
_DTYPE_CODES = {d: i for i, d in enumerate(_DTYPES)}
_PRIMITIVES = ["allreduce", "reduce", "broadcast", "allgather", "gather", "scatter",
               "reduce_scatter", "alltoall", "alltoall_v", "barrier"]


def _communicator(comm):
    """The communicator to use, or None if this process is not in it."""
    if comm is None:
        comm = _get_default_group().get_global_communicator()
    elif isinstance(comm, BaguaProcessGroup):
        comm = comm.get_global_communicator()
    elif not isinstance(comm, BaguaCommunicator):
        raise TypeError(f"bagua: comm must be a BaguaCommunicator (group.get_global_communicator()),"
                        f" got {type(comm).__name__}")
    return comm if comm.rank() >= 0 else None


def _reduce_op(op):
    """bagua.ReduceOp for `op`: one of ours, its value (the original's ints),
    or torch.distributed's by name (by value torch's AVG was our PRODUCT)."""
    if isinstance(op, ReduceOp):
        return op
    name = getattr(op, "name", None)
    if isinstance(name, str) and type(op).__module__.startswith("torch"):
        if name in ReduceOp.__members__:
            return ReduceOp[name]
        raise ValueError(f"bagua: torch.distributed.ReduceOp.{name} has no counterpart here; "
                         f"use bagua.ReduceOp ({', '.join(o.name for o in ReduceOp)})")
    try:
        return ReduceOp(op)
    except ValueError:
        raise ValueError(f"bagua: unknown ReduceOp {op!r}; use bagua.ReduceOp "
                         f"({', '.join(o.name for o in ReduceOp)})") from None


def _op_name(op):
    return _OP_NAMES[_reduce_op(op)]


def _check_tensors(primitive, **tensors):
    """Checks each named tensor; returns (device, dtype) shared by all."""
    device = dtype = None
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"bagua.{primitive}: {name} must be a torch.Tensor, got "
                            f"{type(t).__name__}")
        if t.is_sparse:
            raise ValueError(f"bagua.{primitive}: {name} is sparse; only dense tensors are "
                             "communicated")
        if not t.is_contiguous():
            raise ValueError(f"bagua.{primitive}: {name} is not contiguous; pass "
                             f"{name}.contiguous()")
        if t.dtype not in _DTYPES:
            raise ValueError(f"bagua.{primitive}: {name} has dtype {t.dtype}; supported: "
                             f"{', '.join(_DTYPES.values())}")
        if t.device.type not in ("cpu", "cuda"):
            raise ValueError(f"bagua.{primitive}: {name} is on {t.device}; supported: cpu, cuda")
        if device is None:
            device, dtype = t.device, t.dtype
        elif t.device != device or t.dtype != dtype:
            first = next(iter(tensors))
            raise ValueError(f"bagua.{primitive}: {name} is {t.dtype} on {t.device} but {first} "
                             f"is {dtype} on {device}; they must match")
    return device, dtype


def _need(cond, primitive, message):
    if not cond:
        raise ValueError(f"bagua.{primitive}: {message}")


def _checked_across_ranks(device):
    setting = os.environ.get("BAGUA_COMM_CHECK", "auto")
    if setting == "auto":
        return device.type == "cpu"
    return setting not in ("0", "", "false", "off")


def _agree(comm, backend, device, primitive, dtype, count, root=-1, op=None):
    """Checks every rank entered the same primitive with the same dtype,
    element count, root and op (one allgather of 5 integers)."""
    if comm.nranks() == 1 or not _checked_across_ranks(device):
        return
    mine = torch.tensor([_PRIMITIVES.index(primitive), _DTYPE_CODES.get(dtype, -1), count, root,
                         -1 if op is None else int(_reduce_op(op))], dtype=torch.int64, device=device)
    rows = torch.empty(comm.nranks() * 5, dtype=torch.int64, device=device)
    _call(backend, device, "allgather", mine.data_ptr(), rows.data_ptr(), 40)
    rows = rows.view(-1, 5).cpu().tolist()
    for r, row in enumerate(rows):
        if row == rows[comm.rank()]:
            continue
        kind = _PRIMITIVES[row[0]] if 0 <= row[0] < len(_PRIMITIVES) else "?"
        them_dtype = list(_DTYPES)[row[1]] if 0 <= row[1] < len(_DTYPES) else "?"
        raise ValueError(
            f"bagua.{primitive}: ranks disagree: rank {comm.rank()} called {primitive} with "
            f"{count} {dtype} elements (root {root}, op {op}), rank {r} called {kind} with "
            f"{row[2]} {them_dtype} elements (root {row[3]}, op {row[4]}); every rank must call "
            "the same primitive with the same sizes")


def _call(backend, device, method, *args):
    if device.type == "cuda":
        stream = torch.cuda.current_stream(device).cuda_stream
        return getattr(backend, method)(*args, stream=stream)
    return getattr(backend, method)(*args)


def _prepare(primitive, comm, count_for_check, root=-1, op=None, collective=True, **tensors):
    """Common start of a primitive: (comm, backend, device, dtype) or None.
    `count_for_check` is the element count every rank must agree on."""
    comm = _communicator(comm)
    if comm is None:
        return None
    device, dtype = _check_tensors(primitive, **tensors)
    if root != -1:
        _need(0 <= root < comm.nranks(), primitive,
              f"root {root} is outside the communicator's ranks 0..{comm.nranks() - 1}")
    if op is not None:
        name = _op_name(op)
        if name.startswith("b") and dtype.is_floating_point:
            raise ValueError(f"bagua.{primitive}: ReduceOp.{_reduce_op(op).name} needs an integer "
                             f"dtype, got {dtype}")
    backend = comm.backend(device)
    if collective:
        _agree(comm, backend, device, primitive, dtype, count_for_check, root, op)
    return comm, backend, device, dtype
