"""bagua.torch_api.communication: the original's process groups and
communication primitives (see collectives.py for the rules every primitive
follows: checks, streams, roots as communicator ranks)."""
import io
import pickle

import torch

from .collectives import ReduceOp, _call, _communicator, _DTYPES, _need, _op_name, _prepare
from .process_group import (BaguaCommunicator, BaguaProcessGroup, _get_default_group,
                            from_torch_group, init_process_group, is_initialized, new_group)

__all__ = [
    "ReduceOp", "BaguaProcessGroup", "BaguaCommunicator", "new_group", "from_torch_group",
    "init_process_group", "is_initialized", "send", "recv", "broadcast", "broadcast_object",
    "reduce", "reduce_inplace", "allreduce", "allreduce_inplace", "allgather",
    "allgather_inplace", "gather", "gather_inplace", "scatter", "scatter_inplace",
    "reduce_scatter", "reduce_scatter_inplace", "alltoall", "alltoall_inplace", "alltoall_v",
    "alltoall_v_inplace", "barrier",
]


def _bytes(t):
    return t.numel() * t.element_size()


def _chunk(tensor, rank, count):
    return tensor.view(-1)[rank * count:(rank + 1) * count]


def send(tensor, dst, comm=None):
    """Sends `tensor` to rank `dst` of `comm`."""
    ready = _prepare("send", comm, -1, collective=False, tensor=tensor)
    if ready:
        comm, backend, device, _ = ready
        _need(0 <= dst < comm.nranks() and dst != comm.rank(), "send",
              f"dst {dst} must be another rank of the communicator (0..{comm.nranks() - 1})")
        _call(backend, device, "send", tensor.data_ptr(), _bytes(tensor), dst)


def recv(tensor, src, comm=None):
    """Receives into `tensor` what rank `src` of `comm` sends."""
    ready = _prepare("recv", comm, -1, collective=False, tensor=tensor)
    if ready:
        comm, backend, device, _ = ready
        _need(0 <= src < comm.nranks() and src != comm.rank(), "recv",
              f"src {src} must be another rank of the communicator (0..{comm.nranks() - 1})")
        _call(backend, device, "recv", tensor.data_ptr(), _bytes(tensor), src)


def broadcast(tensor, src=0, comm=None):
    """Copies rank `src`'s `tensor` to every rank's `tensor`."""
    ready = _prepare("broadcast", comm, tensor.numel(), root=src, tensor=tensor)
    if ready:
        _, backend, device, _ = ready
        _call(backend, device, "broadcast", tensor.data_ptr(), _bytes(tensor), src)


def broadcast_object(obj, src=0, comm=None):
    """Pickles `obj` on rank `src` and returns it on every rank."""
    c = _communicator(comm)
    if c is None:
        return obj
    device = _object_device()
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
        _need(recv_tensor.numel() == send_tensor.numel(), "allreduce",
              f"recv_tensor has {recv_tensor.numel()} elements, send_tensor "
              f"{send_tensor.numel()}; they must be equal")
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
        _need(recv_tensor.numel() == send_tensor.numel(), "reduce",
              f"recv_tensor has {recv_tensor.numel()} elements, send_tensor "
              f"{send_tensor.numel()}; they must be equal")
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
        _need(recv_tensor.numel() == send_tensor.numel() * comm.nranks(), "allgather",
              f"recv_tensor needs {comm.nranks()} x {send_tensor.numel()} elements, has "
              f"{recv_tensor.numel()}")
        _call(backend, device, "allgather", send_tensor.data_ptr(), recv_tensor.data_ptr(),
              _bytes(send_tensor))


def allgather_inplace(tensor, comm=None):
    """Chunk r of `tensor` (numel / nranks elements) comes from rank r."""
    c = _communicator(comm)
    if c is not None:
        _need(tensor.numel() % c.nranks() == 0, "allgather_inplace",
              f"{tensor.numel()} elements do not split into {c.nranks()} equal chunks")
        count = tensor.numel() // c.nranks()
        allgather(_chunk(tensor, c.rank(), count).clone(), tensor, c)


def gather(send_tensor, recv_tensor, dst, comm=None):
    """Rank `dst`'s recv_tensor <- every rank's send_tensor, in rank order."""
    ready = _prepare("gather", comm, send_tensor.numel(), root=dst, send_tensor=send_tensor,
                     recv_tensor=recv_tensor)
    if ready:
        comm, backend, device, _ = ready
        if comm.rank() == dst:
            _need(recv_tensor.numel() == send_tensor.numel() * comm.nranks(), "gather",
                  f"recv_tensor needs {comm.nranks()} x {send_tensor.numel()} elements, has "
                  f"{recv_tensor.numel()}")
        _call(backend, device, "gather", send_tensor.data_ptr(), recv_tensor.data_ptr(),
              _bytes(send_tensor), dst)


def gather_inplace(tensor, count, dst, comm=None):
    """On `dst`, chunk r (of `count` elements) of `tensor` comes from rank r."""
    c = _communicator(comm)
    if c is not None:
        _need(tensor.numel() == count * c.nranks(), "gather_inplace",
              f"tensor needs {c.nranks()} x {count} elements, has {tensor.numel()}")
        gather(_chunk(tensor, c.rank(), count).clone(), tensor, dst, c)


def scatter(send_tensor, recv_tensor, src, comm=None):
    """recv_tensor <- chunk r of rank `src`'s send_tensor, on rank r."""
    ready = _prepare("scatter", comm, recv_tensor.numel(), root=src, send_tensor=send_tensor,
                     recv_tensor=recv_tensor)
    if ready:
        comm, backend, device, _ = ready
        if comm.rank() == src:
            _need(send_tensor.numel() == recv_tensor.numel() * comm.nranks(), "scatter",
                  f"send_tensor needs {comm.nranks()} x {recv_tensor.numel()} elements, has "
                  f"{send_tensor.numel()}")
        _call(backend, device, "scatter", send_tensor.data_ptr(), recv_tensor.data_ptr(),
              _bytes(recv_tensor), src)


def scatter_inplace(tensor, count, src, comm=None):
    """Chunk r (of `count` elements) of `tensor` <- chunk r of rank `src`'s."""
    c = _communicator(comm)
    if c is not None:
        _need(tensor.numel() == count * c.nranks(), "scatter_inplace",
              f"tensor needs {c.nranks()} x {count} elements, has {tensor.numel()}")
        source = tensor.clone() if c.rank() == src else tensor
        scatter(source, _chunk(tensor, c.rank(), count), src, c)


def reduce_scatter(send_tensor, recv_tensor, op=ReduceOp.SUM, comm=None):
    """Rank r's recv_tensor <- the reduction of chunk r of every send_tensor."""
    ready = _prepare("reduce_scatter", comm, recv_tensor.numel(), op=op,
                     send_tensor=send_tensor, recv_tensor=recv_tensor)
    if ready:
        comm, backend, device, dtype = ready
        _need(send_tensor.numel() == recv_tensor.numel() * comm.nranks(), "reduce_scatter",
              f"send_tensor needs {comm.nranks()} x {recv_tensor.numel()} elements, has "
              f"{send_tensor.numel()}")
        _call(backend, device, "reduce_scatter", send_tensor.data_ptr(), recv_tensor.data_ptr(),
              recv_tensor.numel(), _DTYPES[dtype], _op_name(op))


def reduce_scatter_inplace(tensor, op=ReduceOp.SUM, comm=None):
    """Chunk r of `tensor` on rank r <- the reduction of every rank's chunk r."""
    c = _communicator(comm)
    if c is not None:
        _need(tensor.numel() % c.nranks() == 0, "reduce_scatter_inplace",
              f"{tensor.numel()} elements do not split into {c.nranks()} equal chunks")
        count = tensor.numel() // c.nranks()
        reduce_scatter(tensor.clone(), _chunk(tensor, c.rank(), count), op, c)


def alltoall(send_tensor, recv_tensor, comm=None):
    """Chunk j of my send_tensor goes to rank j; chunk j of recv_tensor comes from rank j."""
    ready = _prepare("alltoall", comm, send_tensor.numel(), send_tensor=send_tensor,
                     recv_tensor=recv_tensor)
    if ready:
        comm, backend, device, _ = ready
        _need(send_tensor.numel() == recv_tensor.numel(), "alltoall",
              f"send_tensor has {send_tensor.numel()} elements, recv_tensor "
              f"{recv_tensor.numel()}; they must be equal")
        _need(send_tensor.numel() % comm.nranks() == 0, "alltoall",
              f"{send_tensor.numel()} elements do not split into {comm.nranks()} equal chunks")
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
