"""Worker for test_local_updates.py (torchrun, CPU, Gloo): local SGD and
DiLoCo against pure torch.distributed references of the same math written
here, their schedules and checkpoints. Runs the cases named by --cases in
one process (one launch for all: the CI budget) and writes OUT.rank<r>.json
with what each case measured; the test applies the tolerances.

local_sgd_vs_allreduce   LocalSGDAlgorithm(sync_every=1) + SGD against SGD
                         on gradients averaged by dist.all_reduce.
diloco_vs_averaging      DiLoCoAlgorithm(sync_every=1, outer_lr=1,
                         outer_momentum=0, overlap=False) + AdamW against
                         AdamW steps followed by averaging the parameters.
diloco_vs_reference      fragments=2, sync_every=4, overlap (tau=2), Nesterov
                         outer momentum, SGD-momentum inner steps, against a
                         reference: per fragment x0 and a torch.optim.SGD
                         outer optimizer, D = x0 - x averaged by all_reduce,
                         the update x += x0_new - x_sent applied tau steps
                         later. Also: start points bit-identical across ranks
                         after every step, each fragment's start point
                         changes at its scheduled steps only.
checkpoint               fp4, fragments=2, tau=2, AdamW: 12 steps straight
                         against 7 steps, state_dict + optimizer state saved
                         (an update in flight), a fresh model loading them,
                         5 more steps.
bad_fragments            fragments larger than the number of tensors.

--device cuda runs the same on GPUs (NCCL; run_api_gpu.sh's `diloco` step):
the runtime's communication is flushed before each of the reference's
torch.distributed collectives, so two NCCL communicators never have
kernels in flight at once (docs/algorithms.md, async).
"""
import argparse
import io
import json

import torch
import torch.distributed as dist

import bagua.torch_api as bagua
from bagua.torch_api.algorithms import diloco, local_sgd
from job_device import job_device


DEVICE = torch.device("cpu")


def model(seed=5):
    torch.manual_seed(seed)
    # Four equal Linear layers: with fragments=2 the first two (w0 b0 w1 b1)
    # are fragment 0 and the last two fragment 1 (equal element counts).
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8),
                               torch.nn.Tanh(), torch.nn.Linear(8, 8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 8)).to(DEVICE)


def loss_of(net, rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x, y = torch.randn(12, 8, generator=g), torch.randn(12, 8, generator=g)
    return torch.nn.functional.mse_loss(net(x.to(DEVICE)), y.to(DEVICE))


def settle(net):
    """GPU: nothing of the runtime in flight before torch's own collectives."""
    if DEVICE.type == "cuda":
        flush = getattr(net.bagua_algorithm.runtime, "flush", None)  # DiLoCo's; local SGD waits
        if flush is not None:
            flush()
        torch.cuda.synchronize()


def flat(tensors):
    return torch.cat([t.detach().reshape(-1).cpu() for t in tensors])


def gather(t):
    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t.contiguous())
    return out


def average_(tensors):
    for t in tensors:
        dist.all_reduce(t)
        t /= dist.get_world_size()


def against_reference(rank, algorithm, make_opt, sync_reference, steps=6):
    """The model trained under `algorithm`, and the largest difference from
    a reference whose optimizer step and communication are
    `sync_reference(net, ref, ref_opt)`, called after each backward."""
    net, ref = model(), model()
    opt = make_opt(net.parameters())
    net.with_bagua([opt], algorithm)
    ref_opt = make_opt(ref.parameters())
    worst = 0.0
    for step in range(steps):
        opt.zero_grad()
        loss_of(net, rank, step).backward()
        opt.step()
        settle(net)
        ref_opt.zero_grad()
        loss_of(ref, rank, step).backward()
        sync_reference(net, ref, ref_opt)
        worst = max(worst, float((flat(net.parameters()) - flat(ref.parameters())).abs().max()))
    return net, worst


def case_local_sgd_vs_allreduce(rank, out):
    def allreduce_then_step(net, ref, ref_opt):
        average_([p.grad for p in ref.parameters()])
        ref_opt.step()

    net, worst = against_reference(rank, local_sgd.LocalSGDAlgorithm(sync_every=1),
                                   lambda p: torch.optim.SGD(p, lr=0.1), allreduce_then_step)
    out.update(local_sgd_max_diff=worst, local_sgd_syncs=net.bagua_algorithm.syncs,
               local_sgd_weights=flat(net.parameters()).tolist())
    net.bagua_ddp.close()


def case_diloco_vs_averaging(rank, out):
    def step_then_average(net, ref, ref_opt):
        ref_opt.step()
        with torch.no_grad():
            average_([p.data for p in ref.parameters()])

    algorithm = diloco.DiLoCoAlgorithm(sync_every=1, outer_lr=1.0, outer_momentum=0.0,
                                       overlap=False)
    net, worst = against_reference(rank, algorithm, lambda p: torch.optim.AdamW(p, lr=0.01),
                                   step_then_average)
    out.update(averaging_max_diff=worst, averaging_weights=flat(net.parameters()).tolist())
    net.bagua_ddp.close()


class ReferenceDiLoCo:
    """DiLoCo of docs/algorithms.md in plain torch: fragments [0:4) and
    [4:8) of the parameter list, fragment f syncs after local steps
    (f+1)H/F + kH, its update lands tau steps later."""

    def __init__(self, params, h, fragments, tau, lr, momentum):
        self.params = list(params)
        per = len(self.params) // fragments
        self.fragments = [self.params[f * per:(f + 1) * per] for f in range(fragments)]
        self.x0 = [[p.detach().clone() for p in frag] for frag in self.fragments]
        self.outer = [torch.optim.SGD(x0, lr=lr, momentum=momentum, nesterov=True)
                      for x0 in self.x0]
        self.h, self.tau, self.step = h, tau, 0
        self.pending = {}  # fragment -> (due step, x_sent)

    def after_step(self):
        self.step += 1
        for f, (due, sent) in list(self.pending.items()):
            if due == self.step:
                with torch.no_grad():
                    for p, x0, s in zip(self.fragments[f], self.x0[f], sent):
                        p += x0 - s
                del self.pending[f]
        for f in range(len(self.fragments)):
            first = (f + 1) * self.h // len(self.fragments)
            if self.step < first or (self.step - first) % self.h:
                continue
            sent = [p.detach().clone() for p in self.fragments[f]]
            deltas = [x0 - p.detach() for x0, p in zip(self.x0[f], self.fragments[f])]
            average_(deltas)
            for x0, d in zip(self.x0[f], deltas):
                x0.grad = d
            self.outer[f].step()
            self.pending[f] = (self.step + self.tau, sent)


def case_diloco_vs_reference(rank, out, steps=13, h=4, tau=2):
    algorithm = diloco.DiLoCoAlgorithm(sync_every=h, outer_lr=0.7, outer_momentum=0.9,
                                       fragments=2, overlap=True, overlap_steps=tau)
    seen = dict(worst_x0=0.0, identical=True, changed_at={0: [], 1: []}, log=[])

    def reference_step(net, ref, ref_opt):
        impl = net.bagua_algorithm
        if "reference" not in seen:  # ref has not stepped yet: the initial start points
            seen["reference"] = ReferenceDiLoCo(ref.parameters(), h, 2, tau, 0.7, 0.9)
            seen["previous"] = [torch.cat([t.reshape(-1) for t in x0])
                                for x0 in seen["reference"].x0]
        ref_opt.step()
        seen["reference"].after_step()
        step = len(seen["log"]) + 1
        x0 = impl.start_point()
        for f, (now, before) in enumerate(zip(x0, seen["previous"])):
            if not torch.equal(now, before):
                seen["changed_at"][f].append(step)
            seen["identical"] &= all(torch.equal(o, now) for o in gather(now))
            seen["worst_x0"] = max(seen["worst_x0"], float(
                (now.cpu() - flat(seen["reference"].x0[f])).abs().max()))
        seen["previous"] = [x.clone() for x in x0]
        seen["log"].append(impl.sync_steps())

    net, worst = against_reference(
        rank, algorithm, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.5), reference_step,
        steps=steps)
    impl = net.bagua_algorithm
    out.update(reference_max_diff=worst, reference_max_x0_diff=seen["worst_x0"],
               start_points_identical=seen["identical"], x0_changed_at=seen["changed_at"],
               sync_log=seen["log"], bytes_per_step=impl.bytes_per_step,
               local_steps=impl.local_steps)
    net.bagua_ddp.close()


def train(net, opt, rank, steps):
    for step in steps:
        opt.zero_grad()
        loss_of(net, rank, step).backward()
        opt.step()


def fresh_diloco():
    net = model()
    opt = torch.optim.AdamW(net.parameters(), lr=0.01)
    net.with_bagua([opt], diloco.DiLoCoAlgorithm(sync_every=4, fragments=2, overlap_steps=2,
                                                 compression="fp4"))
    return net, opt


def case_checkpoint(rank, out):
    straight, opt = fresh_diloco()
    train(straight, opt, rank, range(12))
    want = flat(straight.parameters())
    straight.bagua_ddp.close()

    first, opt = fresh_diloco()
    train(first, opt, rank, range(7))  # after step 7: fragment 0 sent at 6, due at 8
    buf = io.BytesIO()
    torch.save({"model": first.state_dict(), "opt": opt.state_dict()}, buf)
    keys = sorted(k for k in first.state_dict() if k.startswith("_bagua_diloco."))
    first.bagua_ddp.close()
    buf.seek(0)
    saved = torch.load(buf)
    second, opt = fresh_diloco()
    second.load_state_dict(saved["model"])
    opt.load_state_dict(saved["opt"])
    train(second, opt, rank, range(7, 12))
    out.update(checkpoint_max_diff=float((flat(second.parameters()) - want).abs().max()),
               checkpoint_keys=keys, checkpoint_due=saved["model"]["_bagua_diloco.due"].tolist())
    # A plain torch model takes the weights once the runtime's entries are dropped.
    plain = model()
    plain.load_state_dict({k: v for k, v in saved["model"].items() if not k.startswith("_bagua")})
    second.bagua_ddp.close()


def case_bad_fragments(rank, out):
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    try:
        net.with_bagua([opt], diloco.DiLoCoAlgorithm(sync_every=20, fragments=9))
        out["bad_fragments_error"] = ""
    except ValueError as e:
        out["bad_fragments_error"] = str(e)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cases", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    global DEVICE
    DEVICE = job_device(args.device)
    bagua.init_process_group()
    rank = bagua.get_rank()
    out = {"rank": rank}
    for case in args.cases.split(","):
        globals()[f"case_{case}"](rank, out)
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
