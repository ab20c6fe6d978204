"""Worker for test_communication.py, started by torchrun with N ranks: runs
every communication primitive of bagua.torch_api on CPU tensors for several
dtypes and every applicable ReduceOp, and checks each result against a
reference computed from every rank's inputs, which are exchanged with
torch.distributed's own Gloo all_gather (independent of bagua). Writes
OUT.rank<r>.json: the number of checks and the failures (empty = all good).
With --mismatch KIND, rank 0 deliberately disagrees and the job records the
error each rank got instead."""
import argparse
import json
import time

import torch
import torch.distributed as dist

import bagua.torch_api as bagua
from bagua.torch_api import ReduceOp

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
          torch.uint8, torch.int8]
FLOAT_OPS = [ReduceOp.SUM, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.AVG]
INT_OPS = FLOAT_OPS + [ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR]


def value(rank, n, dtype, salt=0):
    """Small values whose sums, products and averages are exact in every dtype."""
    base = torch.arange(n, dtype=torch.int64) * 7 + rank * 3 + salt
    if dtype.is_floating_point:
        return ((base % 5) - 2).to(dtype)
    if dtype == torch.uint8:
        return (base % 4).to(dtype)
    return ((base % 9) - 4).to(dtype) if dtype != torch.uint8 else base.to(dtype)


def everyone(t):
    """Every rank's `t`, through torch.distributed's Gloo (the reference)."""
    host = t.cpu().to(torch.float64)
    out = [torch.empty_like(host) for _ in range(dist.get_world_size())]
    dist.all_gather(out, host)
    return [o.to(t.dtype).to(t.device) for o in out]


def reduce_all(tensors, op):
    stack = torch.stack([t.to(torch.int64) if not t.dtype.is_floating_point else t.double()
                         for t in tensors])
    if op == ReduceOp.SUM:
        r = stack.sum(0)
    elif op == ReduceOp.PRODUCT:
        r = stack.prod(0)
    elif op == ReduceOp.MIN:
        r = stack.min(0).values
    elif op == ReduceOp.MAX:
        r = stack.max(0).values
    elif op == ReduceOp.AVG:
        r = stack.sum(0) / len(tensors) if tensors[0].dtype.is_floating_point else \
            torch.div(stack.sum(0), len(tensors), rounding_mode="trunc")
    else:
        r = stack[0].clone()
        fn = {ReduceOp.BAND: torch.bitwise_and, ReduceOp.BOR: torch.bitwise_or,
              ReduceOp.BXOR: torch.bitwise_xor}[op]
        for s in stack[1:]:
            r = fn(r, s)
    return r.to(tensors[0].dtype)


class Checker:
    def __init__(self):
        self.count = 0
        self.failures = []

    def expect(self, what, got, want):
        self.count += 1
        if got.dtype in (torch.float16, torch.bfloat16):
            ok = torch.allclose(got.double(), want.double(), rtol=1e-2, atol=1e-2)
        elif got.dtype.is_floating_point:  # averages: a division against a scaling
            ok = torch.allclose(got, want, rtol=1e-6, atol=1e-6)
        else:
            ok = torch.equal(got, want)
        if not ok:
            self.failures.append(f"{what}: got {got.tolist()[:6]} want {want.tolist()[:6]}")


def run_all(check, rank, n):
    for dtype in DTYPES:
        ops = INT_OPS if not dtype.is_floating_point else FLOAT_OPS
        for op in ops:
            if op == ReduceOp.PRODUCT and dtype in (torch.int8, torch.uint8):
                continue  # wraps around differently than the int64 reference
            x = value(rank, 5, dtype)
            want = reduce_all(everyone(x), op)
            out = torch.zeros_like(x)
            bagua.allreduce(x, out, op=op)
            check.expect(f"allreduce {dtype} {op.name}", out, want)
            y = x.clone()
            bagua.allreduce_inplace(y, op=op)
            check.expect(f"allreduce_inplace {dtype} {op.name}", y, want)
            root = n - 1
            r = torch.zeros_like(x)
            bagua.reduce(x, r, dst=root, op=op)
            if rank == root:
                check.expect(f"reduce {dtype} {op.name}", r, want)
            big = value(rank, 3 * n, dtype, salt=1)
            chunks = [c.reshape(-1) for c in everyone(big)]
            rs = torch.zeros(3, dtype=dtype)
            bagua.reduce_scatter(big, rs, op=op)
            check.expect(f"reduce_scatter {dtype} {op.name}", rs,
                         reduce_all([c[3 * rank:3 * rank + 3] for c in chunks], op))
            inplace = big.clone()
            bagua.reduce_scatter_inplace(inplace, op=op)
            # The original's place: the first chunk, the rest as it was.
            check.expect(f"reduce_scatter_inplace {dtype} {op.name}", inplace,
                         torch.cat([reduce_all([c[3 * rank:3 * rank + 3] for c in chunks], op),
                                    big[3:]]))
        x = value(rank, 4, dtype, salt=2)
        all_x = everyone(x)
        b = x.clone()
        bagua.broadcast(b, src=n - 1)
        check.expect(f"broadcast {dtype}", b, all_x[n - 1])
        g = torch.zeros(4 * n, dtype=dtype)
        bagua.allgather(x, g)
        check.expect(f"allgather {dtype}", g, torch.cat(all_x))
        gi = torch.zeros(4 * n, dtype=dtype)
        gi[4 * rank:4 * rank + 4] = x
        bagua.allgather_inplace(gi)
        check.expect(f"allgather_inplace {dtype}", gi, torch.cat(all_x))
        gathered = torch.zeros(4 * n, dtype=dtype)
        bagua.gather(x, gathered, dst=0)
        if rank == 0:
            check.expect(f"gather {dtype}", gathered, torch.cat(all_x))
        gin = torch.zeros(4 * n, dtype=dtype)
        gin[4 * rank:4 * rank + 4] = x
        bagua.gather_inplace(gin, 4, dst=0)
        if rank == 0:
            check.expect(f"gather_inplace {dtype}", gin, torch.cat(all_x))
        source = value(rank, 4 * n, dtype, salt=3)
        root_source = everyone(source)[0]
        part = torch.zeros(4, dtype=dtype)
        bagua.scatter(source, part, src=0)
        check.expect(f"scatter {dtype}", part, root_source[4 * rank:4 * rank + 4])
        si = source.clone()
        bagua.scatter_inplace(si, 4, src=0)
        check.expect(f"scatter_inplace {dtype}", si[4 * rank:4 * rank + 4],
                     root_source[4 * rank:4 * rank + 4])
        # The original's rule: ranks other than the root pass their block alone.
        gin = x.clone() if rank != 0 else torch.zeros(4 * n, dtype=dtype)
        if rank == 0:
            gin[:4] = x
        bagua.gather_inplace(gin, 4, dst=0)
        if rank == 0:
            check.expect(f"gather_inplace, blocks alone {dtype}", gin, torch.cat(all_x))
        si = source.clone() if rank == 0 else torch.zeros(4, dtype=dtype)
        bagua.scatter_inplace(si, 4, src=0)
        check.expect(f"scatter_inplace, blocks alone {dtype}",
                     si[:4] if rank == 0 else si, root_source[4 * rank:4 * rank + 4])
        all_source = everyone(source)
        a2a = torch.zeros_like(source)
        bagua.alltoall(source, a2a)
        check.expect(f"alltoall {dtype}", a2a,
                     torch.cat([all_source[j][4 * rank:4 * rank + 4] for j in range(n)]))
        a2ai = source.clone()
        bagua.alltoall_inplace(a2ai)
        check.expect(f"alltoall_inplace {dtype}", a2ai, a2a)
        same = source.clone()  # one tensor as both send and recv
        bagua.alltoall(same, same)
        check.expect(f"alltoall(t, t) {dtype}", same, a2a)
        # alltoall_v: rank i sends (i + j) % 3 + 1 elements to rank j.
        counts_to = [(rank + j) % 3 + 1 for j in range(n)]
        counts_from = [(j + rank) % 3 + 1 for j in range(n)]
        send = value(rank, sum(counts_to), dtype, salt=4)
        sdispl = [sum(counts_to[:j]) for j in range(n)]
        recv = torch.zeros(sum(counts_from), dtype=dtype)
        rdispl = [sum(counts_from[:j]) for j in range(n)]
        bagua.alltoall_v(send, counts_to, sdispl, recv, counts_from, rdispl)
        sent = everyone(torch.cat([send, torch.zeros(3 * n - send.numel(), dtype=dtype)]))
        want = []
        for j in range(n):
            cj = [(j + k) % 3 + 1 for k in range(n)]
            off = sum(cj[:rank])
            want.append(sent[j][off:off + cj[rank]])
        check.expect(f"alltoall_v {dtype}", recv, torch.cat(want))
        if n > 1:  # equal counts, one tensor as both send and recv
            same = source.clone()
            per = [4] * n
            bagua.alltoall_v(same, per, [4 * j for j in range(n)], same, per,
                             [4 * j for j in range(n)])
            check.expect(f"alltoall_v(t, .., t) {dtype}", same, a2a)
        # send/recv around a ring.
        if n > 1:
            got = torch.zeros_like(x)
            right, left = (rank + 1) % n, (rank - 1) % n
            if rank % 2 == 0:
                bagua.send(x, right)
                bagua.recv(got, left)
            else:
                bagua.recv(got, left)
                bagua.send(x, right)
            check.expect(f"send/recv {dtype}", got, all_x[left])
    bagua.barrier()
    obj = bagua.broadcast_object({"from": rank, "list": [1, 2]} if rank == 0 else None, 0)
    check.count += 1
    if obj != {"from": 0, "list": [1, 2]}:
        check.failures.append(f"broadcast_object: {obj}")


def compressed(check, rank, n):
    """The original bucket op's compression="MinMaxUInt8" (ByteGrad's 8-bit
    average, bucket.py): the same values on every rank, within two 8-bit
    steps of the exact mean (inputs in [-1, 1]: a step is at most 2/255)."""
    from bagua.torch_api.bucket import _allreduce_minmax_uint8
    from bagua.torch_api.process_group import _get_default_group

    comm = _get_default_group().get_global_communicator()
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = torch.sin(torch.arange(1001, dtype=torch.float32) * (rank + 1)).to(dtype)
        exact = sum(t.float() for t in everyone(x)) / n
        got = _allreduce_minmax_uint8(x.clone(), True, comm)
        check.count += 1
        copies = everyone(got)
        if any(not torch.equal(c, copies[0]) for c in copies):
            check.failures.append(f"minmax_uint8 {dtype}: ranks differ")
        error = (got.float() - exact).abs().max().item()
        slack = 0.0 if dtype == torch.float32 else 2 ** -7  # the dtype's own rounding
        if not error <= 2 * 2 / 255 + slack:
            check.failures.append(f"minmax_uint8 {dtype}: error {error} above two 8-bit steps")


def subgroup(check, rank, n):
    """new_group with a subset: ranks 0 and n-1 only; the others return at once."""
    members = [0, n - 1]
    group = bagua.new_group(members)
    x = torch.full((3,), float(rank + 1))
    bagua.allreduce_inplace(x, comm=group.get_global_communicator())
    check.count += 1
    want = float(sum(r + 1 for r in set(members))) if rank in members else float(rank + 1)
    if not torch.equal(x, torch.full((3,), want)):
        check.failures.append(f"subgroup allreduce: {x.tolist()} want {want}")
    comm = group.get_global_communicator()
    check.count += 1
    if (comm.rank() >= 0) != (rank in members):
        check.failures.append(f"subgroup membership: rank {comm.rank()}")


def mismatch(kind, rank):
    if kind == "size":
        t = torch.zeros(4 + (rank == 0))
        bagua.allreduce_inplace(t)
    elif kind == "dtype":
        t = torch.zeros(4, dtype=torch.float64 if rank == 0 else torch.float32)
        bagua.allreduce_inplace(t)
    elif kind == "primitive":
        t = torch.zeros(4)
        if rank == 0:
            bagua.broadcast(t, 0)
        else:
            bagua.allreduce_inplace(t)
    elif kind in ("alltoall_v_larger", "alltoall_v_smaller"):
        # Rank 0 sends rank 1 one element more (or less) than rank 1 expects.
        extra = 1 if kind == "alltoall_v_larger" else -1
        send_counts = [2, 2 + (extra if rank == 0 else 0)]
        recv = torch.zeros(4)
        bagua.alltoall_v(torch.ones(5), send_counts, [0, 2], recv, [2, 2], [0, 2])
    elif kind == "bitwise_float":
        bagua.allreduce_inplace(torch.zeros(4), op=ReduceOp.BAND)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--mismatch", default=None)
    p.add_argument("--device", default="cpu", help="cpu (Gloo) or cuda (NCCL)")
    args = p.parse_args()
    if args.device == "cuda":
        torch.cuda.set_device(bagua.get_local_rank() % torch.cuda.device_count())
        torch.set_default_device("cuda")
    bagua.init_process_group()
    rank, n = bagua.get_rank(), bagua.get_world_size()
    from bagua.torch_api.process_group import cpu_collectives

    result = {"rank": rank, "device": args.device, "cpu_collectives": cpu_collectives()}
    if args.mismatch:
        start = time.time()
        try:
            mismatch(args.mismatch, rank)
            result["error"] = None
        except Exception as e:  # noqa: BLE001 - the test reads the type and text
            result["error"] = f"{type(e).__name__}: {e}"
        result["seconds"] = time.time() - start
    else:
        check = Checker()
        run_all(check, rank, n)
        compressed(check, rank, n)
        if n >= 3:
            subgroup(check, rank, n)
        result.update(count=check.count, failures=check.failures)
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
