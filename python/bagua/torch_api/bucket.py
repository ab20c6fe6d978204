"""BaguaBucket: tensors communicated together, with the operations a
user-defined algorithm appends (the original's API), and the backend that
runs those operations: bucket k runs once all its tensors are marked ready
and buckets 0..k-1 have run, the same order on every rank."""
import torch

from .collectives import _DTYPES, _call, _prepare
from .communication import ReduceOp, allreduce_inplace
from .process_group import _get_default_group


class BaguaBucket:
    def __init__(self, tensors, name, flatten=True, alignment=1):
        self.tensors = list(tensors)
        self.name = name
        self.flatten = flatten
        self.alignment = alignment
        self._ops = []
        self._compressors = {}  # compression="MinMaxUInt8": its scratch, per size

    def flattened_tensor(self):
        """A new flat tensor holding the bucket's effective tensors in order."""
        return torch.cat([t.bagua_getter_closure().reshape(-1) for t in self.tensors])

    def bytes(self):
        return sum(t.bagua_getter_closure().numel() * t.bagua_getter_closure().element_size()
                   for t in self.tensors)

    def clear_ops(self):
        self._ops = []
        return self

    def append_python_op(self, python_function, group=None):
        """Runs python_function(bucket_name) when the bucket is ready."""
        self._ops.append(python_function)
        return self

    def append_centralized_synchronous_op(self, hierarchical=False, average=True,
                                          scattergather=False, compression=None, group=None):
        """Allreduce of the bucket's effective tensors (flattened into one
        message) over `group`, the mean (average) or the sum.
        compression="MinMaxUInt8" (the original's one codec) does it in 8
        bits, ByteGrad's way and math in the runtime (compress each rank's
        chunk, alltoall, reduce, compress, allgather), so every rank ends
        with the same values; it needs float32, float16 or bfloat16 tensors.
        hierarchical and scattergather change how the original moved the
        bytes, not the result, and are accepted."""
        if compression is not None and (not isinstance(compression, str) or
                                        compression.lower().replace("_", "") != "minmaxuint8"):
            raise ValueError(f"bagua: append_centralized_synchronous_op(compression="
                             f"{compression!r}): the only codec is \"MinMaxUInt8\" (or None)")
        group = group or _get_default_group()
        op = ReduceOp.AVG if average else ReduceOp.SUM

        def centralized(name):
            flat = self.flattened_tensor()
            comm = group.get_global_communicator()
            if compression is None:
                allreduce_inplace(flat, op=op, comm=comm)
            else:
                flat = _allreduce_minmax_uint8(flat, average, comm, self._compressors)
            offset = 0
            for t in self.tensors:
                target = t.bagua_getter_closure()
                target.copy_(flat[offset:offset + target.numel()].view_as(target))
                offset += target.numel()

        self._ops.append(centralized)
        return self

    def _run(self):
        for op in self._ops:
            op(self.name)


def _allreduce_minmax_uint8(flat, average, comm, compressors=None):
    """`flat` averaged (or summed) in 8 bits over `comm`, as ByteGrad does;
    padded with zeros to a multiple of its ranks (ByteGrad's chunks), the
    padding cut off. `compressors`: a dict keeping the runtime's operation
    (and its scratch) between calls, per size (a bucket's)."""
    op = ReduceOp.AVG if average else ReduceOp.SUM
    ready = _prepare("allreduce", comm, flat.numel(), op=op, send_tensor=flat, recv_tensor=flat)
    if ready is None:
        return flat  # this process is not in `comm`
    comm, backend, device, dtype = ready
    if dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"bagua: compression=\"MinMaxUInt8\" needs float32, float16 or "
                         f"bfloat16 tensors, got {dtype}")
    n = comm.nranks()
    padded = torch.zeros(-(-flat.numel() // n) * n, dtype=dtype, device=device)
    padded[:flat.numel()].copy_(flat)
    key = (id(backend), padded.numel(), dtype, bool(average))
    compressor = None if compressors is None else compressors.get(key)
    if compressor is None:
        from .. import _C

        compressor = _C.MinMaxUInt8Allreduce(backend, padded.numel(), _DTYPES[dtype],
                                             bool(average))
        if compressors is not None:
            compressors.clear()  # a bucket has one size: the old one's scratch goes
            compressors[key] = compressor
    _call(compressor, device, "run", padded.data_ptr())
    return padded[:flat.numel()]


class PythonBucketBackend:
    """Runs the buckets' Python operations in bucket order as tensors become ready."""

    def __init__(self, buckets):
        self.buckets = buckets
        self._bucket_of = {}
        for index, bucket in enumerate(buckets):
            for t in bucket.tensors:
                self._bucket_of[t.bagua_tensor_name] = index
        self._reset_step()

    def _reset_step(self):
        self._ready = [set() for _ in self.buckets]
        self._next = 0

    def mark_communication_ready(self, name):
        index = self._bucket_of.get(name)
        if index is None:
            raise ValueError(f"bagua: tensor {name!r} is not in any bucket")
        self._ready[index].add(name)
        while self._next < len(self.buckets) and \
                len(self._ready[self._next]) == len(self.buckets[self._next].tensors):
            self.buckets[self._next]._run()
            self._next += 1

    def wait_pending_comm_ops(self):
        """Runs every bucket not run yet (tensors never marked count as ready)."""
        for index in range(self._next, len(self.buckets)):
            for t in self.buckets[index].tensors:
                self._ready[index].add(t.bagua_tensor_name)
        self.mark_communication_ready_all()
        self._reset_step()

    def mark_communication_ready_all(self):
        while self._next < len(self.buckets):
            self.buckets[self._next]._run()
            self._next += 1
