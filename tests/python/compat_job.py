"""Worker for test_original_compat.py (forked CPU ranks, Gloo): the rest of
the original's public names, one scenario per --case; writes
OUT_<case>.rank<r>.json.

coalesced   communication.allreduce_coalesced_inplace and broadcast_coalesced
            over tensors of two dtypes (float32, int32) and shapes.
functional  data_parallel.functional.all_reduce inside autograd: the forward
            sums every rank's tensor, the backward sums the gradients.
utils       torch_api.utils.apply_flattened_call(_all) with
            torch.distributed.all_reduce (averages, as the original).
pl19        PyTorch Lightning 1.9's Bagua strategy (--pl19 DIR holds it):
            Lightning imports with bagua installed, wraps a LightningModule
            with DistributedDataParallel_V1_9_0 exactly as its strategy's
            _setup_model does, and one backward averages the gradients; its
            reduce() and broadcast() go through bagua's collectives.
"""
import argparse
import json
import sys

import torch
import torch.distributed as dist

import bagua.torch_api as bagua


def values(rank, shape, dtype):
    n = 1
    for d in shape:
        n *= d
    return (torch.arange(n, dtype=torch.float64) * (rank + 2) + rank).reshape(shape).to(dtype)


def case_coalesced(rank, out):
    from bagua.torch_api.communication import allreduce_coalesced_inplace, broadcast_coalesced

    world = bagua.get_world_size()
    specs = [((3,), torch.float32), ((2, 2), torch.int32), ((5,), torch.float32),
             ((1,), torch.int32)]
    summed = [values(rank, s, d) for s, d in specs]
    allreduce_coalesced_inplace(summed)
    want = [sum(values(r, s, d).to(torch.float64) for r in range(world)).to(d) for s, d in specs]
    out["allreduce"] = all(torch.equal(a, b) for a, b in zip(summed, want))
    out["dtypes_kept"] = [str(t.dtype) for t in summed] == [str(d) for _, d in specs]
    sent = [values(rank, s, d) for s, d in specs]
    broadcast_coalesced(sent, src=1)
    out["broadcast"] = all(torch.equal(a, values(1, s, d)) for a, (s, d) in zip(sent, specs))


def case_functional(rank, out):
    from bagua.torch_api.data_parallel.functional import all_reduce

    world = bagua.get_world_size()
    x = values(rank, (4,), torch.float32).requires_grad_()
    y = all_reduce(x)  # torch's ReduceOp.SUM, the whole job
    out["forward"] = torch.equal(y.detach(), sum(values(r, (4,), torch.float32)
                                                  for r in range(world)))
    out["input_untouched"] = torch.equal(x.detach(), values(rank, (4,), torch.float32))
    weight = torch.full((4,), float(rank + 1))
    (y * weight).sum().backward()
    # d/dx_r of sum_s (w_s . sum_t x_t) = sum_s w_s on every rank
    out["backward"] = torch.equal(x.grad, torch.full((4,), float(sum(range(1, world + 1)))))


def case_utils(rank, out):
    from bagua.torch_api.utils import (apply_flattened_call, apply_flattened_call_all,
                                       check_contiguous, flatten, unflatten)

    world = dist.get_world_size()
    bucket = [values(rank, (3,), torch.float32), values(rank, (2, 2), torch.float32)]
    apply_flattened_call(bucket, dist.all_reduce)
    want = [sum(values(r, t.shape, torch.float32) for r in range(world)) / world for t in bucket]
    out["averaged"] = all(torch.allclose(a, b) for a, b in zip(bucket, want))
    mixed = [values(rank, (2,), torch.float32), values(rank, (3,), torch.float64)]
    apply_flattened_call_all(mixed, dist.all_reduce)
    out["averaged_per_type"] = all(
        torch.allclose(t, sum(values(r, t.shape, t.dtype) for r in range(world)) / world)
        for t in mixed)
    flat = flatten(bucket)
    out["views_contiguous"] = check_contiguous(list(unflatten(flat, bucket)))
    out["separate_not_contiguous"] = not check_contiguous([torch.zeros(2), torch.zeros(2)])


def case_pl19(rank, out, pl19):
    sys.path.insert(0, pl19)
    import pytorch_lightning as pl
    from bagua.torch_api.algorithms import Algorithm
    from pytorch_lightning.strategies import bagua as pl_bagua

    out["lightning"] = pl.__version__

    class Net(pl.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(5)
            self.layer = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.layer(x)

    net = Net()
    reference = Net()  # the same initial weights: the average gradient, computed locally
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    strategy = pl_bagua.BaguaStrategy(algorithm="gradient_allreduce")
    wrapper = pl_bagua.LightningBaguaModule(net)
    # BaguaStrategy._setup_model, as Lightning 1.9 calls it
    model = pl_bagua.BaguaDistributedDataParallel(
        module=wrapper, optimizers=[opt], algorithm=Algorithm.init("gradient_allreduce"),
        gradient_as_bucket_view=True)
    out["unwrapped"] = model.module is wrapper and wrapper.lightning_module is net
    # what its manual-optimization path toggles (trainer.model.inner...)
    out["inner_sync"] = model.inner.require_backward_grad_sync is True
    out["module_name"] = model.bagua_module_name == wrapper._bagua_module_name

    def batch(r):
        g = torch.Generator().manual_seed(50 + r)
        return torch.randn(6, 4, generator=g)

    net(batch(rank)).square().sum().backward()
    world = bagua.get_world_size()
    for r in range(world):
        (reference(batch(r)).square().sum() / world).backward()
    out["gradients_averaged"] = all(torch.allclose(a.grad, b.grad, atol=1e-6)
                                    for a, b in zip(net.parameters(), reference.parameters()))
    mean = strategy.reduce(torch.tensor([float(rank)]), reduce_op="mean")
    total = strategy.reduce(torch.tensor([float(rank)]), reduce_op="sum")
    out["reduce"] = [mean.item(), total.item()]
    out["broadcast"] = strategy.broadcast({"from": rank}, src=1)
    strategy.barrier()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--pl19", help="a folder holding pytorch_lightning 1.9 (case pl19)")
    args = p.parse_args()
    bagua.init_process_group()
    rank = bagua.get_rank()
    out = {"rank": rank}
    if args.case == "pl19":
        case_pl19(rank, out, args.pl19)
    else:
        globals()[f"case_{args.case}"](rank, out)
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
