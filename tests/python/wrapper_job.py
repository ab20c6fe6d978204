"""Worker for test_wrapper_edges.py (CPU, Gloo): with_bagua's edge cases that
torch DDP users and original Bagua scripts meet; one per --case, writes
OUT.rank<r>.json.

kept_grad       find_unused_parameters=True: a parameter unused in a second
                backward of the step keeps the gradient it has (it was zeroed).
eval_alone      rank 0 alone evaluates (eval mode, and train mode under
                no_grad) while the other waits at a barrier: no buffer
                broadcast waits for it.
ignored         ignored parameters and buffers keep each rank's own values at
                wrapping and in training forwards.
checkpoint      a model with a child called `module` is saved and loaded whole
                by bagua.checkpoint (reachable as bagua.checkpoint).
refused         sparse embeddings are refused at wrapping; a model converted
                after wrapping fails its backward naming the parameter.
overlapping     two groups sharing rank 1 ({0,1}, {1,2}), a model wrapped on
                each: every rank agrees on the engines' names and trains.
rewrapped       a module wrapped twice by DistributedDataParallel, then by
                with_bagua: each wrapping closes the engine before it.
nograd_autotune with autotune searching, rank 0 alone runs train-mode forwards
                under no_grad between steps (a logged prediction): no step
                is counted for them, so the ranks' decisions stay in step.
state_device    rank 0's optimizer state reaches the others on the parameters'
                device, whatever the current CUDA device (here: the lookup of
                the default device fails, so using it fails the case).
"""
import argparse
import json
import os
import tempfile
import warnings

import torch
import torch.distributed as dist

import bagua.torch_api as bagua
from bagua.torch_api.algorithms import gradient_allreduce


def algorithm():
    return gradient_allreduce.GradientAllReduceAlgorithm()


class Pair(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.ones(2))
        self.b = torch.nn.Parameter(torch.ones(2))

    def forward(self):
        return self.a, self.b


def case_kept_grad(rank, out):
    from bagua.torch_api.data_parallel import DistributedDataParallel

    pair = Pair()
    ddp = DistributedDataParallel(pair, optimizers=[torch.optim.SGD(pair.parameters(), lr=0.1)],
                                  algorithm=algorithm(), find_unused_parameters=True)
    a, b = ddp()
    ((a * b).sum() * (rank + 1)).backward()
    first = pair.b.grad.clone()
    a, _ = ddp()
    (a.sum() * (rank + 1)).backward()
    out.update(first=first.tolist(), second=pair.b.grad.tolist())


def case_eval_alone(rank, out):
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.with_bagua([opt], algorithm())
    model(torch.randn(4, 2)).sum().backward()
    opt.step()
    if rank == 0:
        model.eval()
        with torch.no_grad():
            model(torch.randn(4, 2))
        model.train()
        with torch.no_grad():
            model(torch.randn(4, 2))
    dist.barrier()
    out["done"] = True


def case_ignored(rank, out):
    torch.manual_seed(rank)
    model = torch.nn.Linear(2, 2)
    model.register_buffer("local_stat", torch.full((2,), float(rank)))
    model.register_buffer("shared_stat", torch.full((2,), float(rank)))
    model._ddp_params_and_buffers_to_ignore = ["bias", "local_stat"]
    bias = model.bias.detach().clone()
    model.with_bagua([torch.optim.SGD(model.parameters(), lr=0.1)], algorithm())
    wrapped = dict(bias=torch.equal(model.bias, bias), local=model.local_stat.tolist())
    model(torch.ones(1, 2)).sum().backward()
    out.update(bias_kept_at_wrap=wrapped["bias"], local_at_wrap=wrapped["local"],
               local_after_forward=model.local_stat.tolist(),
               shared_after_forward=model.shared_stat.tolist())


class WithModuleChild(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.module = torch.nn.Linear(2, 2)
        self.head = torch.nn.Linear(2, 1)

    def forward(self, x):
        return self.head(self.module(x))


def case_checkpoint(rank, out):
    torch.manual_seed(3)
    model = WithModuleChild()
    path = os.path.join(tempfile.gettempdir(), f"bagua-ckpt-{os.environ.get('MASTER_PORT', 0)}")
    bagua.checkpoint.save_checkpoint(1, path, model)
    torch.manual_seed(4)
    fresh = WithModuleChild()
    bagua.checkpoint.load_checkpoint(path, fresh)
    out["same"] = all(torch.equal(x, y) for x, y in
                      zip(model.state_dict().values(), fresh.state_dict().values()))
    out["keys"] = sorted(fresh.state_dict())


def case_refused(rank, out):
    sparse = torch.nn.Sequential(torch.nn.Embedding(10, 3, sparse=True))
    try:
        sparse.with_bagua([torch.optim.SGD(sparse.parameters(), lr=0.1)], algorithm())
        out["sparse"] = "accepted"
    except ValueError as e:
        out["sparse"] = str(e)
    model = torch.nn.Linear(2, 2)
    model.with_bagua([torch.optim.SGD(model.parameters(), lr=0.1)], algorithm())
    model.double()
    try:
        model(torch.ones(1, 2, dtype=torch.float64)).sum().backward()
        out["converted"] = "accepted"
    except RuntimeError as e:
        out["converted"] = str(e)


def case_rewrapped(rank, out):
    from bagua.torch_api.data_parallel import DistributedDataParallel

    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    first = DistributedDataParallel(model, optimizers=[opt], algorithm=algorithm())
    second = DistributedDataParallel(model, optimizers=[opt], algorithm=algorithm())
    second(torch.ones(1, 2)).sum().backward()
    out.update(first_closed=first.inner._bagua_backend is None,
               forward_hooks=len(model._forward_pre_hooks),
               first_count=first.inner.communication_count,
               second_count=second.inner.communication_count)
    model.with_bagua([opt], algorithm())  # and with_bagua replaces a wrapper's engine
    out["second_closed"] = second.inner._bagua_backend is None


def case_overlapping(rank, out):
    low, high = bagua.new_group([0, 1]), bagua.new_group([1, 2])
    trained = []
    for group, members in ((low, (0, 1)), (high, (1, 2))):
        if rank not in members:
            continue
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.with_bagua([opt], algorithm(), process_group=group)
        model(torch.ones(1, 2)).sum().backward()
        opt.step()
        trained.append(list(members))
    dist.barrier()  # rank 0 holds the store that ranks 1 and 2 still meet in
    out["trained"] = trained


def case_nograd_autotune(rank, out):
    from bagua.torch_api.data_parallel import Autotune

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(8)])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model.with_bagua([opt], algorithm(), autotune=Autotune(budget_steps=30, warmup_steps=1))
    for step in range(40):
        model(torch.randn(4, 16)).sum().backward()
        opt.step()
        opt.zero_grad()
        if rank == 0 and step % 3 == 0:
            with torch.no_grad():
                model(torch.randn(1, 16))
    out["steps"] = model.bagua_ddp.bagua_train_step_counter
    out["done"] = True


def case_state_device(rank, out):
    from bagua.torch_api import communication

    def no_default(*_):
        raise AssertionError("broadcast on the default device, not the parameters' own")

    communication._object_device = no_default
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if rank == 0:  # state only rank 0 has, as after loading a checkpoint there
        model(torch.ones(1, 2)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    model.with_bagua([optimizer], algorithm())
    out.update(momentum=[v["momentum_buffer"].flatten().tolist()
                         for v in optimizer.state.values()])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    bagua.init_process_group()
    rank = bagua.get_rank()
    out = {"rank": rank}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        globals()[f"case_{args.case}"](rank, out)
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
