"""bagua.torch_api.communication: the original's process groups and
communication primitives (see collectives.py for the rules every primitive
follows: checks, streams, roots as communicator ranks)."""
import io
import pickle

import torch

from .collectives import (ReduceOp, _call, _checked_across_ranks, _communicator, _DTYPES, _need,
                          _op_name, _prepare)
from .process_group import (BaguaCommunicator, BaguaProcessGroup, _get_default_group,
                            from_torch_group, init_process_group, is_initialized, new_group)
from .utils import apply_flattened_call

__all__ = [
    "ReduceOp", "BaguaProcessGroup", "BaguaCommunicator", "new_group", "from_torch_group",
    "init_process_group", "is_initialized", "send", "recv", "broadcast", "broadcast_object",
    "reduce", "reduce_inplace", "allreduce", "allreduce_inplace", "allgather",
    "allgather_inplace", "gather", "gather_inplace", "scatter", "scatter_inplace",
    "reduce_scatter", "reduce_scatter_inplace", "alltoall", "alltoall_inplace", "alltoall_v",
    "alltoall_v_inplace", "barrier", "allreduce_coalesced_inplace", "broadcast_coalesced",
]


def _bytes(t):
    return t.numel() * t.element_size()


def _chunk(tensor, rank, count):
    return tensor.view(-1)[rank * count:(rank + 1) * count]


def _need_equal(primitive, a, a_name, b, b_name):
    _need(a.numel() == b.numel(), primitive,
          f"{a_name} has {a.numel()} elements, {b_name} {b.numel()}; they must be equal")


def _need_blocks(primitive, whole, whole_name, nranks, count):
    """`whole` must hold one block of `count` elements per rank."""
    _need(whole.numel() == count * nranks, primitive,
          f"{whole_name} needs {nranks} x {count} elements, has {whole.numel()}")


def _equal_chunks(primitive, tensor, nranks):
    """The elements of each of nranks equal chunks of `tensor`."""
    _need(tensor.numel() % nranks == 0, primitive,
          f"{tensor.numel()} elements do not split into {nranks} equal chunks")
    return tensor.numel() // nranks


def _point_to_point(primitive, tensor, peer, peer_name, comm):
    """send and recv: `tensor` to or from rank `peer` (named `peer_name`)."""
    ready = _prepare(primitive, comm, -1, collective=False, tensor=tensor)
    if ready:
        comm, backend, device, _ = ready
        _need(0 <= peer < comm.nranks() and peer != comm.rank(), primitive,
              f"{peer_name} {peer} must be another rank of the communicator "
              f"(0..{comm.nranks() - 1})")
        _call(backend, device, primitive, tensor.data_ptr(), _bytes(tensor), peer)


def send(tensor, dst, comm=None):
    """Sends `tensor` to rank `dst` of `comm`."""
    _point_to_point("send", tensor, dst, "dst", comm)


def recv(tensor, src, comm=None):
    """Receives into `tensor` what rank `src` of `comm` sends."""
    _point_to_point("recv", tensor, src, "src", comm)


def broadcast(tensor, src=0, comm=None):
    """Copies rank `src`'s `tensor` to every rank's `tensor`."""
    ready = _prepare("broadcast", comm, tensor.numel(), root=src, tensor=tensor)
    if ready:
        _, backend, device, _ = ready
        _call(backend, device, "broadcast", tensor.data_ptr(), _bytes(tensor), src)


def broadcast_object(obj, src=0, comm=None, *, device=None):
    """Pickles `obj` on rank `src` and returns it on every rank. `device`
    (every rank's own) carries the bytes: the device of the tensors it goes
    with; default: the current CUDA device once CUDA is in use, else CPU."""
    c = _communicator(comm)
    if c is None:
        return obj
    device = torch.device(device) if device is not None else _object_device()
    size = torch.zeros(1, dtype=torch.int64, device=device)
    payload = None
    if c.rank() == src:
        payload = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8).to(device)
        size.fill_(payload.numel())
    broadcast(size, src, c)
    if payload is None:
        payload = torch.empty(int(size.item()), dtype=torch.uint8, device=device)
    broadcast(payload, src, c)
    if c.rank() == src:
        return obj
    return pickle.load(io.BytesIO(payload.cpu().numpy().tobytes()))


def allreduce(send_tensor, recv_tensor, op=ReduceOp.SUM, comm=None):
    """recv_tensor <- the reduction of every rank's send_tensor."""
    ready = _prepare("allreduce", comm, send_tensor.numel(), op=op, send_tensor=send_tensor,
                     recv_tensor=recv_tensor)
    if ready:
        _, backend, device, dtype = ready
        _need_equal("allreduce", recv_tensor, "recv_tensor", send_tensor, "send_tensor")
        if recv_tensor.data_ptr() != send_tensor.data_ptr():
            recv_tensor.copy_(send_tensor)
        _call(backend, device, "allreduce", recv_tensor.data_ptr(), recv_tensor.numel(),
              _DTYPES[dtype], _op_name(op))


def allreduce_inplace(tensor, op=ReduceOp.SUM, comm=None):
    allreduce(tensor, tensor, op, comm)


def reduce(send_tensor, recv_tensor, dst, op=ReduceOp.SUM, comm=None):
    """Rank `dst`'s recv_tensor <- the reduction of every rank's send_tensor."""
    ready = _prepare("reduce", comm, send_tensor.numel(), root=dst, op=op,
                     send_tensor=send_tensor, recv_tensor=recv_tensor)
    if ready:
        _, backend, device, dtype = ready
        _need_equal("reduce", recv_tensor, "recv_tensor", send_tensor, "send_tensor")
        _call(backend, device, "reduce", send_tensor.data_ptr(), recv_tensor.data_ptr(),
              send_tensor.numel(), _DTYPES[dtype], _op_name(op), dst)


def reduce_inplace(tensor, dst, op=ReduceOp.SUM, comm=None):
    reduce(tensor, tensor, dst, op, comm)


def allgather(send_tensor, recv_tensor, comm=None):
    """recv_tensor <- every rank's send_tensor, in rank order."""
    ready = _prepare("allgather", comm, send_tensor.numel(), send_tensor=send_tensor,
                     recv_tensor=recv_tensor)
    if ready:
        comm, backend, device, _ = ready
        _need_blocks("allgather", recv_tensor, "recv_tensor", comm.nranks(), send_tensor.numel())
        _call(backend, device, "allgather", send_tensor.data_ptr(), recv_tensor.data_ptr(),
              _bytes(send_tensor))


def allgather_inplace(tensor, comm=None):
    """Chunk r of `tensor` (numel / nranks elements) comes from rank r."""
    c = _communicator(comm)
    if c is not None:
        count = _equal_chunks("allgather_inplace", tensor, c.nranks())
        allgather(_chunk(tensor, c.rank(), count).clone(), tensor, c)


def _rooted(primitive, send_tensor, recv_tensor, root, comm, whole_name):
    """gather and scatter: every rank moves one block; the root's `whole_name`
    tensor holds one block per rank."""
    whole, block = ((recv_tensor, send_tensor) if whole_name == "recv_tensor"
                    else (send_tensor, recv_tensor))
    ready = _prepare(primitive, comm, block.numel(), root=root, send_tensor=send_tensor,
                     recv_tensor=recv_tensor)
    if ready:
        comm, backend, device, _ = ready
        if comm.rank() == root:
            _need_blocks(primitive, whole, whole_name, comm.nranks(), block.numel())
        _call(backend, device, primitive, send_tensor.data_ptr(), recv_tensor.data_ptr(),
              _bytes(block), root)


def _inplace_blocks(primitive, tensor, count, comm, root):
    """(communicator, this rank's block) of an in-place gather or scatter over
    `tensor`: on the root one block of `count` elements per rank, its own at
    its rank; elsewhere that too, or the block alone (`count` elements, the
    original's rule for ranks other than the root). (None, None): not a
    member."""
    c = _communicator(comm)
    if c is None:
        return None, None
    if c.rank() != root and tensor.numel() == count:
        return c, tensor.view(-1)
    _need_blocks(primitive, tensor, "tensor", c.nranks(), count)
    return c, _chunk(tensor, c.rank(), count)


def gather(send_tensor, recv_tensor, dst, comm=None):
    """Rank `dst`'s recv_tensor <- every rank's send_tensor, in rank order."""
    _rooted("gather", send_tensor, recv_tensor, dst, comm, "recv_tensor")


def gather_inplace(tensor, count, dst, comm=None):
    """On `dst`, chunk r (of `count` elements) of `tensor` comes from rank r:
    its chunk r of `tensor`, or its whole `tensor` of `count` elements."""
    c, block = _inplace_blocks("gather_inplace", tensor, count, comm, dst)
    if c is not None:
        gather(block.clone(), tensor, dst, c)


def scatter(send_tensor, recv_tensor, src, comm=None):
    """recv_tensor <- chunk r of rank `src`'s send_tensor, on rank r."""
    _rooted("scatter", send_tensor, recv_tensor, src, comm, "send_tensor")


def scatter_inplace(tensor, count, src, comm=None):
    """Chunk r (of `count` elements) of `tensor` <- chunk r of rank `src`'s;
    a rank other than `src` may pass just its chunk (`count` elements)."""
    c, block = _inplace_blocks("scatter_inplace", tensor, count, comm, src)
    if c is not None:
        source = tensor.clone() if c.rank() == src else tensor
        scatter(source, block, src, c)


def reduce_scatter(send_tensor, recv_tensor, op=ReduceOp.SUM, comm=None):
    """Rank r's recv_tensor <- the reduction of chunk r of every send_tensor."""
    ready = _prepare("reduce_scatter", comm, recv_tensor.numel(), op=op,
                     send_tensor=send_tensor, recv_tensor=recv_tensor)
    if ready:
        comm, backend, device, dtype = ready
        _need_blocks("reduce_scatter", send_tensor, "send_tensor", comm.nranks(),
                     recv_tensor.numel())
        _call(backend, device, "reduce_scatter", send_tensor.data_ptr(), recv_tensor.data_ptr(),
              recv_tensor.numel(), _DTYPES[dtype], _op_name(op))


def reduce_scatter_inplace(tensor, op=ReduceOp.SUM, comm=None):
    """The first numel / nranks elements of `tensor` on rank r <- the
    reduction of every rank's chunk r, the rest left as it was: the original's
    place (MPI's in-place reduce-scatter, through its Aluminum library), not
    NCCL's (chunk r)."""
    c = _communicator(comm)
    if c is not None:
        count = _equal_chunks("reduce_scatter_inplace", tensor, c.nranks())
        reduce_scatter(tensor.clone(), _chunk(tensor, 0, count), op, c)


def _unaliased(send_tensor, recv_tensor):
    """send_tensor, or a copy of it where its bytes overlap recv_tensor's:
    an exchange in one buffer overwrites blocks before they are sent
    (alltoall(t, t) returned wrong data; the original's library copied too)."""
    s, r = send_tensor.data_ptr(), recv_tensor.data_ptr()
    if s < r + _bytes(recv_tensor) and r < s + _bytes(send_tensor):
        return send_tensor.clone()
    return send_tensor


def alltoall(send_tensor, recv_tensor, comm=None):
    """Chunk j of my send_tensor goes to rank j; chunk j of recv_tensor comes from rank j."""
    ready = _prepare("alltoall", comm, send_tensor.numel(), send_tensor=send_tensor,
                     recv_tensor=recv_tensor)
    if ready:
        comm, backend, device, _ = ready
        _need_equal("alltoall", send_tensor, "send_tensor", recv_tensor, "recv_tensor")
        _equal_chunks("alltoall", send_tensor, comm.nranks())
        send_tensor = _unaliased(send_tensor, recv_tensor)
        _call(backend, device, "alltoall", send_tensor.data_ptr(), recv_tensor.data_ptr(),
              _bytes(send_tensor) // comm.nranks())


def alltoall_inplace(tensor, comm=None):
    c = _communicator(comm)
    if c is not None:
        alltoall(tensor.clone(), tensor, c)


def _counts(primitive, name, values, n):
    values = [int(v) for v in values]
    _need(len(values) == n, primitive, f"{name} needs {n} entries (one per rank), has "
          f"{len(values)}")
    _need(all(v >= 0 for v in values), primitive, f"{name} has a negative entry: {values}")
    return values


def _agree_exchange(comm, backend, device, send_counts, recv_counts):
    """alltoall_v: rank i's send_counts[j] must be rank j's recv_counts[i] (a
    larger send aborted Gloo's receiver, a smaller one left stale data). One
    allgather of both lists, where the other cross-rank checks run (CPU, or
    BAGUA_COMM_CHECK=1); every rank reads the same table, so all raise on a
    mismatch (a rank's own argument errors are raised before it, on that rank
    alone, as for every primitive)."""
    n = comm.nranks()
    if n == 1:
        table = [[send_counts, recv_counts]]
    elif _checked_across_ranks(device):
        mine = torch.tensor(send_counts + recv_counts, dtype=torch.int64, device=device)
        rows = torch.empty(n * 2 * n, dtype=torch.int64, device=device)
        _call(backend, device, "allgather", mine.data_ptr(), rows.data_ptr(), 16 * n)
        table = rows.view(n, 2, n).cpu().tolist()
    else:
        return
    for i in range(n):
        for j in range(n):
            _need(table[i][0][j] == table[j][1][i], "alltoall_v",
                  f"rank {i} sends {table[i][0][j]} elements to rank {j}, whose recv_counts[{i}] "
                  f"is {table[j][1][i]}; they must be equal")


def alltoall_v(send_tensor, send_counts, send_displs, recv_tensor, recv_counts, recv_displs,
               comm=None):
    """Like alltoall with per-rank element counts and offsets (displacements)."""
    ready = _prepare("alltoall_v", comm, -1, send_tensor=send_tensor, recv_tensor=recv_tensor)
    if ready:
        comm, backend, device, _ = ready
        n, size = comm.nranks(), send_tensor.element_size()
        lists = {}
        for name, values in (("send_counts", send_counts), ("send_displs", send_displs),
                             ("recv_counts", recv_counts), ("recv_displs", recv_displs)):
            lists[name] = _counts("alltoall_v", name, values, n)
        for side, tensor in (("send", send_tensor), ("recv", recv_tensor)):
            for j, (c, d) in enumerate(zip(lists[f"{side}_counts"], lists[f"{side}_displs"])):
                _need(d + c <= tensor.numel(), "alltoall_v",
                      f"{side}_displs[{j}] + {side}_counts[{j}] = {d + c} is beyond "
                      f"{side}_tensor's {tensor.numel()} elements")
        _agree_exchange(comm, backend, device, lists["send_counts"], lists["recv_counts"])
        send_tensor = _unaliased(send_tensor, recv_tensor)
        _call(backend, device, "alltoall_v", send_tensor.data_ptr(),
              [c * size for c in lists["send_counts"]], [d * size for d in lists["send_displs"]],
              recv_tensor.data_ptr(), [c * size for c in lists["recv_counts"]],
              [d * size for d in lists["recv_displs"]])


def alltoall_v_inplace(tensor, counts, displs, comm=None):
    c = _communicator(comm)
    if c is not None:
        alltoall_v(tensor.clone(), counts, displs, tensor, counts, displs, c)


def _object_device():
    """CUDA once this process uses CUDA (NCCL, as the original), else CPU (Gloo)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def barrier(comm=None):
    """Returns once every rank of `comm` entered it."""
    c = _communicator(comm)
    if c is not None:
        token = torch.zeros(1, device=_object_device())
        allreduce(token, token, ReduceOp.SUM, c)
        if token.is_cuda:
            torch.cuda.current_stream(token.device).synchronize()


def _coalesced(primitive, tensors, run):
    """`run(flat)` once per dtype and device of `tensors` (in their order: the
    same on every rank), on the group flattened into one buffer, then the
    result copied back into each tensor (utils.apply_flattened_call)."""
    groups = {}
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"bagua {primitive}: expected tensors, got {type(t).__name__}")
        groups.setdefault((t.dtype, t.device), []).append(t)
    with torch.no_grad():
        for group in groups.values():
            apply_flattened_call(group, run)


def allreduce_coalesced_inplace(tensors, op=ReduceOp.SUM, comm=None):
    """allreduce_inplace of every tensor of `tensors`, one collective per
    dtype and device (the original's, which took one dtype only)."""
    _coalesced("allreduce_coalesced_inplace", tensors,
               lambda flat: allreduce_inplace(flat, op, comm))


def broadcast_coalesced(tensors, src=0, comm=None):
    """broadcast of every tensor of `tensors` from rank `src`, one collective
    per dtype and device."""
    _coalesced("broadcast_coalesced", tensors, lambda flat: broadcast(flat, src, comm))
