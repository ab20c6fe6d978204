"""Worker for test_autotune_sync.py (torchrun, CPU, Gloo); writes
OUT.rank<r>.json. For --algorithm (local_sgd or diloco):

search    autotune=True from sync_every=--start, the syncs real (Gloo), the
          step times from a virtual clock (VirtualClock: each step costs
          STEP_S, each sync SYNC_S, so the search takes the same path however
          loaded the machine is): every rank records each change of
          sync_every (engine step, H, the runtime's schedule base); the
          state, saved by rank 0; for DiLoCo
          the start points after the search (must be bit-identical).
          Then a checkpoint (state_dict) and a fresh engine loading it
          (must come back with the tuned H and its schedule base), and a
          fresh engine with autotune=<saved state> (must start at the
          winner, no search). A checkpoint taken during the trial without
          syncs must hold the starting H.
mismatch  a bucket-size state given to this algorithm: ValueError.
diverge   rank 1's runtime applies twice the H decided (a fault injected
          here): every rank must stop at that decision with the
          RuntimeError naming the disagreement, none hangs.
"""
import argparse
import io
import json
import os

import torch
import torch.distributed as dist

import bagua.torch_api as bagua
from bagua.torch_api.algorithms import diloco, local_sgd
from bagua.torch_api.data_parallel import autotune_sync
from bagua.torch_api.data_parallel.autotune import Autotune

STEP_S = 0.010  # virtual seconds of a step's compute
SYNC_S = 0.050  # virtual seconds of one sync: at H=4 a step takes 0.44x the time of no sync


class VirtualClock:
    """Stands in for autotune_sync._HostClock (rank 0's step clock on CPU) in
    the search case: on a loaded 2-CPU machine real step times moved the
    search's path (one probe fewer, 1 of 2 CI runs). What the search decides
    from real times: bench/results/sync_autotune_gpu_2026-11-27."""
    now = 0.0

    def __init__(self):
        self.t = VirtualClock.now

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1000.0

    @classmethod
    def step(cls, runtime):
        """After a step: STEP_S, and SYNC_S where the schedule syncs (once per
        H steps; never in the reference trial, whose H lies beyond its end)."""
        cls.now += STEP_S
        if runtime is not None and (runtime.steps - runtime.schedule_base) % runtime.sync_every == 0:
            cls.now += SYNC_S


def build(args):
    torch.manual_seed(0)
    return torch.nn.Sequential(*[torch.nn.Linear(args.width, args.width)
                                 for _ in range(args.layers)])


def algorithm(args):
    if args.algorithm == "local_sgd":
        return local_sgd.LocalSGDAlgorithm(sync_every=args.start)
    return diloco.DiLoCoAlgorithm(sync_every=args.start, fragments=2)


def wrap(args, autotune):
    model = build(args)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    model = model.with_bagua([opt], algorithm(args), autotune=autotune)
    changes = []
    impl = model.bagua_algorithm
    original = impl.change_sync_every

    def record(every):
        original(every)
        runtime = impl.runtime
        changes.append([model.bagua_ddp.bagua_train_step_counter, int(every),
                        runtime.schedule_base if runtime is not None else None])

    impl.change_sync_every = record
    return model, opt, changes


def train(model, opt, steps, args, rank):
    x = torch.randn(2, args.width, generator=torch.Generator().manual_seed(rank))
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), x).backward()
        opt.step()
        VirtualClock.step(model.bagua_algorithm.runtime)


def start_points(model):
    x0 = [t.cpu() for t in model.bagua_algorithm.start_point()]
    identical = True
    for t in x0:
        all_ = [torch.empty_like(t) for _ in range(dist.get_world_size())]
        dist.all_gather(all_, t)
        identical &= all(torch.equal(a, all_[0]) for a in all_)
    return identical


def case_search(args, rank, out):
    autotune_sync._HostClock = VirtualClock
    out["clock"] = {"step_s": STEP_S, "sync_s": SYNC_S}
    model, opt, changes = wrap(args, Autotune(budget_steps=args.budget,
                                              max_sync_every=args.max_sync_every))
    steps = 0
    searching = ("waiting", "searching")
    tuner = model.bagua_ddp._autotuner
    while model.bagua_ddp.autotune_state()["status"] in searching and steps < args.budget + 5:
        train(model, opt, 1, args, rank)
        steps += 1
        if tuner.current is not None and tuner.current[0] == 0 and "mid_reference" not in out:
            # A checkpoint during the trial without syncs saves the starting H.
            key = f"_bagua_{args.algorithm}.sync_every"
            out["mid_reference"] = int(model.state_dict()[key])
    train(model, opt, 3, args, rank)  # past the decision
    runtime = model.bagua_algorithm.runtime
    out["state"] = model.bagua_ddp.autotune_state()
    out["changes"] = changes
    out["final"] = [runtime.sync_every, runtime.schedule_base]
    if args.algorithm == "diloco":
        runtime.flush()
        out["start_points_identical"] = start_points(model)
    path = os.path.join(os.path.dirname(args.out), f"sync_state_{args.algorithm}.json")
    model.bagua_ddp.autotune_state(path)
    # A checkpoint keeps the tuned schedule.
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    fresh, _, _ = wrap(args, None)
    buffer.seek(0)
    fresh.load_state_dict(torch.load(buffer))
    r = fresh.bagua_algorithm.runtime
    out["restored"] = [r.sync_every, r.schedule_base]
    dist.barrier()
    # A saved state: the winner from the first step, no search.
    reused, reused_opt, reused_changes = wrap(args, path)
    train(reused, reused_opt, 3, args, rank)
    out["reused"] = {"status": reused.bagua_ddp.autotune_state()["status"],
                     "sync_every": reused.bagua_algorithm.runtime.sync_every,
                     "changes_after_start": reused_changes}


def case_mismatch(args, rank, out):
    state = {"format": "bagua-autotune/1", "status": "done", "algorithm": "bytegrad",
             "winner": {"bucket_bytes": 1 << 20, "hierarchical": None}}
    try:
        wrap(args, state)
        out["mismatch"] = None
    except ValueError as error:
        out["mismatch"] = str(error)


def case_small_budget(args, rank, out):
    try:
        wrap(args, Autotune(budget_steps=2))
        out["small_budget"] = None
    except ValueError as error:
        out["small_budget"] = str(error)


def case_diverge(args, rank, out):
    model, opt, _ = wrap(args, Autotune(budget_steps=args.budget))
    impl = model.bagua_algorithm
    if rank == 1:
        applied = impl.change_sync_every
        impl.change_sync_every = lambda every: applied(2 * every)
    out["diverge"] = None
    try:
        train(model, opt, args.budget, args, rank)  # the first decision is within it
    except RuntimeError as error:
        out["diverge"] = str(error)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", required=True)
    parser.add_argument("--algorithm", default="local_sgd")
    parser.add_argument("--out", required=True)
    parser.add_argument("--start", type=int, default=4)
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--max-sync-every", type=int, default=256)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(1)  # 2 ranks on 2 cores: more threads make step times erratic
    bagua.init_process_group()
    rank = bagua.get_rank()
    out = {}
    for case in args.case.split(","):
        globals()[f"case_{case}"](args, rank, out)
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
