"""Worker for test_original_api.py (torchrun, CPU, Gloo): one scenario of the
original API per run, chosen by --case; writes OUT.rank<r>.json.

state_dict     with_bagua keeps the module's keys; a checkpoint loads into the
               plain model and back.
optimizer      rank 0's optimizer has state (a checkpointed Adam), the others
               are fresh with another lr: after with_bagua all are equal.
no_sync        DDP class: 2 micro-batches under no_sync() + 1 outside give the
               average over ranks of the summed local gradients, with one
               communication.
custom         a user-defined algorithm (gradient allreduce in a few lines of
               Python ops, registered by name) trains like the built-in one;
               one with compression="MinMaxUInt8" (the original's ByteGrad
               ops) leaves 8-bit averaged gradients.
sync_bn        SyncBatchNorm equals one BatchNorm over every rank's batch
               (outputs, running statistics, input gradients).
ddp_args       DDP's keyword arguments: device_ids=None, bucket_cap_mb,
               find_unused_parameters; device_ids naming another device fails.
fused          with_bagua(..., fused_optimizer=True): rank 0's AdamW state is
               broadcast, the step is fused, and training equals AdamW on the
               average gradient of both ranks' batches (computed locally).
"""
import argparse
import json

import torch
import torch.distributed as dist

import bagua.torch_api as bagua
from bagua.torch_api.algorithms import Algorithm, AlgorithmImpl, GlobalAlgorithmRegistry
from bagua.torch_api.algorithms import gradient_allreduce
from bagua.torch_api.bucket import BaguaBucket
from bagua.torch_api.contrib import SyncBatchNorm
from bagua.torch_api.data_parallel import DistributedDataParallel


def model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))


def batch(rank, step=0, n=8):
    g = torch.Generator().manual_seed(100 * rank + step)
    return torch.randn(n, 6, generator=g), torch.randint(0, 3, (n,), generator=g)


def flat(params):
    return torch.cat([p.detach().reshape(-1) for p in params]).tolist()


def case_state_dict(rank, out):
    plain = model()
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net.with_bagua([opt], gradient_allreduce.GradientAllReduceAlgorithm())
    x, y = batch(rank)
    torch.nn.functional.cross_entropy(net(x), y).backward()
    opt.step()
    out["keys_equal"] = list(net.state_dict()) == list(plain.state_dict())
    plain.load_state_dict(net.state_dict())
    out["into_plain"] = flat(plain.parameters()) == flat(net.parameters())
    with torch.no_grad():
        for p in plain.parameters():
            p.add_(1.0)
    net.load_state_dict(plain.state_dict())
    out["back"] = flat(plain.parameters()) == flat(net.parameters())
    out["module_name"] = net.bagua_module_name
    out["algorithm"] = type(net.bagua_algorithm).__name__


def case_optimizer(rank, out):
    net = model()
    opt = torch.optim.Adam(net.parameters(), lr=0.01 if rank == 0 else 0.5)
    if rank == 0:  # a checkpointed optimizer: it has state
        x, y = batch(rank)
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
        opt.zero_grad()
    net.with_bagua([opt], gradient_allreduce.GradientAllReduceAlgorithm())
    state = opt.state_dict()
    out["lr"] = state["param_groups"][0]["lr"]
    out["state"] = {str(k): {n: (v.tolist() if torch.is_tensor(v) else v)
                             for n, v in s.items()} for k, s in state["state"].items()}
    out["weights"] = flat(net.parameters())


def case_fused(rank, out):
    from bagua.torch_api.contrib import is_fused

    net, ref = model(), model()
    opt = torch.optim.AdamW(net.parameters(), lr=0.01 if rank == 0 else 0.5)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=0.01)
    net.with_bagua([opt], gradient_allreduce.GradientAllReduceAlgorithm(), fused_optimizer=True)
    out["fused"] = is_fused(opt)
    for step in range(5):
        opt.zero_grad()
        x, y = batch(rank, step)
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
        ref_opt.zero_grad()
        for r in range(2):  # the average of both ranks' gradients
            x, y = batch(r, step)
            (torch.nn.functional.cross_entropy(ref(x), y) / 2).backward()
        ref_opt.step()
    out["weights"] = flat(net.parameters())
    out["reference"] = flat(ref.parameters())
    out["lr"] = opt.param_groups[0]["lr"]


def case_no_sync(rank, out):
    net = model()
    wrapped = DistributedDataParallel(net, device_ids=None, algorithm="gradient_allreduce")
    for step in range(2):
        with wrapped.no_sync():
            x, y = batch(rank, step)
            torch.nn.functional.cross_entropy(wrapped(x), y).backward()
    x, y = batch(rank, 2)
    torch.nn.functional.cross_entropy(wrapped(x), y).backward()
    out["communications"] = wrapped.inner.communication_count
    out["grads"] = flat(p.grad for p in net.parameters())
    local = model()
    for step in range(3):
        x, y = batch(rank, step)
        torch.nn.functional.cross_entropy(local(x), y).backward()
    mine = torch.tensor(flat(p.grad for p in local.parameters()))
    everyone = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, mine)
    out["reference"] = (sum(everyone) / len(everyone)).tolist()


class UserAllreduceImpl(AlgorithmImpl):
    """Gradient allreduce as a user would write it with the original's API."""

    def init_operations(self, bagua_ddp, bucket):
        bucket.clear_ops()

        def average(name):
            for tensor in bucket.tensors:
                bagua.allreduce_inplace(tensor.bagua_getter_closure(), op=bagua.ReduceOp.AVG,
                                        comm=self.process_group.get_global_communicator())

        bucket.append_python_op(average, group=self.process_group)


class UserAllreduce(Algorithm):
    def reify(self, process_group):
        return UserAllreduceImpl(process_group)


class UserByteGradImpl(AlgorithmImpl):
    """The original's ByteGradAlgorithmImpl.init_operations, as users copied it."""

    def init_operations(self, bagua_ddp, bucket):
        bucket.clear_ops()
        bucket.append_centralized_synchronous_op(
            hierarchical=False, average=True, scattergather=True, compression="MinMaxUInt8",
            group=self.process_group)


class UserByteGrad(Algorithm):
    def reify(self, process_group):
        return UserByteGradImpl(process_group)


def compressed_gradients(rank, out):
    """One backward under UserByteGrad: the gradients it leaves, and the
    exact mean of every rank's local gradients."""
    net = model()
    net.with_bagua([torch.optim.SGD(net.parameters(), lr=0.1)], UserByteGrad())
    x, y = batch(rank)
    torch.nn.functional.cross_entropy(net(x), y).backward()
    out["compressed"] = flat(p.grad for p in net.parameters())
    local = model()
    torch.nn.functional.cross_entropy(local(x), y).backward()
    mine = torch.tensor(flat(p.grad for p in local.parameters()))
    everyone = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, mine)
    out["exact_mean"] = (sum(everyone) / len(everyone)).tolist()
    out["value_range"] = (torch.stack(everyone).max() - torch.stack(everyone).min()).item()
    try:
        BaguaBucket([], "b").append_centralized_synchronous_op(
            compression="zstd")
        out["bad_codec_error"] = None
    except ValueError as e:
        out["bad_codec_error"] = str(e)


def train(net, algorithm, rank, steps=5):
    opt = torch.optim.SGD(net.parameters(), lr=0.2)
    net.with_bagua([opt], algorithm)
    for step in range(steps):
        x, y = batch(rank, step)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return flat(net.parameters())


def case_custom(rank, out):
    GlobalAlgorithmRegistry.register("user_allreduce", UserAllreduce, description="by the user")
    out["listed"] = "user_allreduce" in GlobalAlgorithmRegistry.available_algorithms()
    out["user"] = train(model(), Algorithm.init("user_allreduce"), rank)
    out["builtin"] = train(model(), Algorithm.init("gradient_allreduce"), rank)
    compressed_gradients(rank, out)


def case_sync_bn(rank, out):
    world = dist.get_world_size()
    torch.manual_seed(3)
    local_bn = torch.nn.BatchNorm1d(4)
    sync_bn = SyncBatchNorm.convert_sync_batchnorm(torch.nn.Sequential(local_bn))[0]
    reference = torch.nn.BatchNorm1d(4)
    all_x = [torch.randn(5 + r, 4, generator=torch.Generator().manual_seed(r)) * (r + 1) + r
             for r in range(world)]
    x = all_x[rank].clone().requires_grad_(True)
    weight_out = torch.randn(5 + rank, 4, generator=torch.Generator().manual_seed(50 + rank))
    y = sync_bn(x)
    (y * weight_out).sum().backward()
    ref_x = torch.cat(all_x).requires_grad_(True)
    ref_y = reference(ref_x)
    all_w = [torch.randn(5 + r, 4, generator=torch.Generator().manual_seed(50 + r))
             for r in range(world)]
    (ref_y * torch.cat(all_w)).sum().backward()
    start = sum(5 + r for r in range(rank))
    rows = slice(start, start + 5 + rank)
    out["y_err"] = float((y - ref_y[rows]).abs().max())
    out["grad_err"] = float((x.grad - ref_x.grad[rows]).abs().max())
    out["mean_err"] = float((sync_bn.running_mean - reference.running_mean).abs().max())
    out["var_err"] = float((sync_bn.running_var - reference.running_var).abs().max())
    out["is_sync"] = isinstance(sync_bn, SyncBatchNorm)


class WithUnused(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = model()
        self.extra = torch.nn.Linear(2, 2)  # never used: needs find_unused_parameters

    def forward(self, x):
        return self.body(x)


def case_ddp_args(rank, out):
    net = WithUnused()
    wrapped = DistributedDataParallel(net, device_ids=None, bucket_cap_mb=0.0001,
                                      find_unused_parameters=True, algorithm="bytegrad",
                                      average=True)
    x, y = batch(rank)
    torch.nn.functional.cross_entropy(wrapped(x), y).backward()
    out["buckets_planned"] = wrapped.inner._bagua_backend.reducer.num_buckets
    out["weights"] = flat(net.parameters())
    try:
        DistributedDataParallel(model(), device_ids=[0])
        out["device_ids_error"] = None
    except ValueError as e:
        out["device_ids_error"] = str(e)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True, help="a case, or several separated by commas "
                   "(then each writes OUT_<case>.rank<r>.json)")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    bagua.init_process_group()
    rank = bagua.get_rank()
    names = args.case.split(",")
    for name in names:
        out = {"rank": rank}
        globals()[f"case_{name}"](rank, out)
        prefix = args.out if len(names) == 1 else f"{args.out}_{name}"
        with open(f"{prefix}.rank{rank}.json", "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
