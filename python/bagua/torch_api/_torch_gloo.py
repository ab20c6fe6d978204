"""CPU collectives on torch's own Gloo process group, for builds without
libgloo (and when BAGUA_CPU_COLLECTIVES=torch): the runtime's
TorchCommunicator (python/src/torch_communicator.h) calls these methods on
its worker thread, holding the GIL; torch releases it while a collective
runs. Buffers arrive as (address, size): CPU memory the runtime owns or the
caller's tensors, viewed here as tensors without a copy.

Reductions get "sum", "product", "min", "max", "band", "bor" or "bxor" (the
runtime finishes "avg" itself, with the Gloo path's rounding), on the dtypes
the runtime names; every rank calls every method in the same order.
"""
import ctypes
import datetime

import torch
import torch.distributed as dist

_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float64": torch.float64, "int8": torch.int8, "uint8": torch.uint8,
    "int32": torch.int32, "int64": torch.int64,
}
_OPS = {
    "sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
    "max": dist.ReduceOp.MAX, "band": dist.ReduceOp.BAND, "bor": dist.ReduceOp.BOR,
    "bxor": dist.ReduceOp.BXOR,
}


def _bytes_at(address, nbytes):
    """The nbytes of memory at `address` as a uint8 tensor (no copy)."""
    if nbytes == 0:
        return torch.empty(0, dtype=torch.uint8)
    return torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(address), dtype=torch.uint8)


def _elements_at(address, count, dtype):
    dtype = _DTYPES[dtype]
    return _bytes_at(address, count * dtype.itemsize).view(dtype)


def _make_group(store, rank, size, timeout, iface):
    if not iface:
        return dist.ProcessGroupGloo(store, rank, size, timeout)
    options = dist.ProcessGroupGloo._Options()
    options._devices = [dist.ProcessGroupGloo.create_device(interface=iface)]
    options._timeout = timeout
    return dist.ProcessGroupGloo(store, rank, size, options)


class TorchGlooBackend:
    """rank `rank` of `size` in a Gloo group of its own, keyed by `prefix` in
    `store` (a torch.distributed Store); every member constructs it."""

    def __init__(self, store, prefix, rank, size, timeout_s, iface=""):
        self.rank = rank
        self.size = size
        timeout = datetime.timedelta(seconds=timeout_s)
        self.pg = _make_group(dist.PrefixStore(prefix, store), rank, size, timeout, iface)

    def allreduce(self, address, count, dtype, op):
        opts = dist.AllreduceOptions()
        opts.reduceOp = _OPS[op]
        self.pg.allreduce([_elements_at(address, count, dtype)], opts).wait()

    def reduce(self, in_address, out_address, count, dtype, op, root):
        data = _elements_at(in_address, count, dtype)
        # Gloo's reduce uses the tensor as scratch on every rank: the root
        # reduces into its output, the others into a copy of their input.
        if self.rank == root:
            out = _elements_at(out_address, count, dtype)
            if out_address != in_address:
                out.copy_(data)
            data = out
        else:
            data = data.clone()
        opts = dist.ReduceOptions()
        opts.reduceOp = _OPS[op]
        opts.rootRank = root
        self.pg.reduce([data], opts).wait()

    def reduce_scatter(self, in_address, out_address, count_per_rank, dtype, op):
        whole = _elements_at(in_address, count_per_rank * self.size, dtype).clone()
        self.allreduce(whole.data_ptr(), whole.numel(), dtype, op)
        mine = whole[self.rank * count_per_rank:(self.rank + 1) * count_per_rank]
        _elements_at(out_address, count_per_rank, dtype).copy_(mine)

    def allgather(self, in_address, out_address, nbytes):
        if nbytes == 0:
            return
        blocks = list(_bytes_at(out_address, nbytes * self.size).split(nbytes))
        self.pg.allgather([blocks], [_bytes_at(in_address, nbytes)]).wait()

    def gather(self, in_address, out_address, nbytes, root):
        if nbytes == 0:
            return
        blocks = list(_bytes_at(out_address, nbytes * self.size).split(nbytes)) \
            if self.rank == root else []
        opts = dist.GatherOptions()
        opts.rootRank = root
        self.pg.gather([blocks] if blocks else [], [_bytes_at(in_address, nbytes)], opts).wait()

    def scatter(self, in_address, out_address, nbytes, root):
        if nbytes == 0:
            return
        blocks = list(_bytes_at(in_address, nbytes * self.size).split(nbytes)) \
            if self.rank == root else []
        opts = dist.ScatterOptions()
        opts.rootRank = root
        self.pg.scatter([_bytes_at(out_address, nbytes)], [blocks] if blocks else [], opts).wait()

    def alltoall(self, in_address, out_address, nbytes):
        if nbytes == 0:
            return
        total = nbytes * self.size
        self.pg.alltoall_base(_bytes_at(out_address, total), _bytes_at(in_address, total),
                              [], [], dist.AllToAllOptions()).wait()

    def alltoallv(self, in_address, send_bytes, send_offsets, out_address, recv_bytes,
                  recv_offsets):
        # Gloo takes blocks packed in rank order: pack and unpack around it.
        # Every rank enters, also one that moves nothing (decentralized
        # shift_one's idle rank in an odd world): it is a collective.
        source = torch.cat([_bytes_at(in_address + o, n) for o, n in zip(send_offsets, send_bytes)])
        target = torch.empty(sum(recv_bytes), dtype=torch.uint8)
        self.pg.alltoall_base(target, source, list(recv_bytes), list(send_bytes),
                              dist.AllToAllOptions()).wait()
        for block, offset, n in zip(target.split(list(recv_bytes)), recv_offsets, recv_bytes):
            if n:
                _bytes_at(out_address + offset, n).copy_(block)

    def broadcast(self, address, nbytes, root):
        if nbytes == 0:
            return
        opts = dist.BroadcastOptions()
        opts.rootRank = root
        self.pg.broadcast([_bytes_at(address, nbytes)], opts).wait()

    def isend(self, address, nbytes, peer):
        """Posts a send; returns what the runtime waits on (its wait())."""
        return self.pg.send([_bytes_at(address, max(nbytes, 0))], peer, 0)

    def recv(self, address, nbytes, peer):
        self.pg.recv([_bytes_at(address, nbytes)], peer, 0).wait()

    def barrier(self):
        self.pg.barrier().wait()
