"""Worker for test_algorithms.py (torchrun, CPU, Gloo): QAdam and
decentralized SGD against pure-torch references of the same math, written
here from the reference's formulas, with every rank's data exchanged through
torch.distributed's own Gloo. Writes OUT.rank<r>.json with the largest
differences seen (the test applies the tolerances).

qadam_warmup      warmup_steps beyond the run: QAdam + QAdamAlgorithm equals
                  torch.optim.Adam (foreach=False) on allreduced gradients.
qadam_compressed  after the warm-up, each step: the averaged momentum equals
                  the ByteGrad reference (MinMaxUInt8 per chunk, mean, again
                  MinMaxUInt8) of every rank's m = lerp(m, g + wd p), within
                  one quantization step; the update equals the frozen-variance
                  formula on that momentum.
decentralized     --mode all|shift_one, --interval k: the weights after backward
                  equal the reference average (allreduce, or the shift_one
                  peer's through send/recv) on communicating steps and the
                  local weights otherwise; the final weights equal the
                  reference run of x <- avg(x) - lr g(x).
"""
import argparse
import json
import math

import torch
import torch.distributed as dist

import bagua.torch_api as bagua
from bagua.torch_api.algorithms import decentralized, q_adam
from job_device import job_device


def model(seed=5):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(12, 10, generator=g), torch.randint(0, 4, (12,), generator=g)


DEVICE = torch.device("cpu")  # --device cuda: the lpd case on GPUs (NCCL)


def loss_of(net, rank, step):
    x, y = batch(rank, step)
    return torch.nn.functional.cross_entropy(net(x.to(DEVICE)), y.to(DEVICE))


def gather(t):
    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t.contiguous())
    return out


def flat(tensors):
    return torch.cat([t.detach().reshape(-1).cpu() for t in tensors])


# -- MinMaxUInt8 and ByteGrad, from the reference's formulas ------------------
def roundtrip(x):
    mn, mx = x.min(), x.max()
    if mn == mx:
        return torch.full_like(x, float(mn))
    scale = torch.tensor(255.0) / (mx - mn + torch.tensor(1e-7))
    upper = torch.round(mx * scale)
    lower = upper - 255.0
    q = torch.clamp(torch.minimum(torch.round(x * scale), upper) - lower, 0, 255)
    return (q + lower) / scale


def bytegrad_reference(buckets):
    """Every rank's flat bucket (padded to a multiple of n) -> the result."""
    n = len(buckets)
    chunk = buckets[0].numel() // n
    out = torch.empty_like(buckets[0])
    steps = torch.empty(n)
    for c in range(n):
        parts = [roundtrip(b[c * chunk:(c + 1) * chunk]) for b in buckets]
        reduced = torch.stack(parts).sum(0) / n
        out[c * chunk:(c + 1) * chunk] = roundtrip(reduced)
        steps[c] = (reduced.max() - reduced.min()) / 255.0
    return out, steps, chunk


def padded(v, n):
    extra = (-v.numel()) % n
    return torch.cat([v, torch.zeros(extra)]) if extra else v


# -- cases ---------------------------------------------------------------------------
def case_qadam_warmup(rank, out, steps=6):
    net, ref = model(), model()
    opt = q_adam.QAdamOptimizer(net.parameters(), lr=0.01, warmup_steps=100, weight_decay=0.01)
    net.with_bagua([opt], q_adam.QAdamAlgorithm(opt, hierarchical=False))
    ref_opt = torch.optim.Adam(ref.parameters(), lr=0.01, weight_decay=0.01, foreach=False)
    worst = 0.0
    for step in range(steps):
        opt.zero_grad()
        loss_of(net, rank, step).backward()
        opt.step()
        ref_opt.zero_grad()
        loss_of(ref, rank, step).backward()
        for p in ref.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        ref_opt.step()
        worst = max(worst, float((flat(net.parameters()) - flat(ref.parameters())).abs().max()))
    out["max_param_diff"] = worst
    out["weights"] = flat(net.parameters()).tolist()


def case_qadam_compressed(rank, out, warmup=3, steps=8, new_beta1=None):
    n = dist.get_world_size()
    net = model()
    opt = q_adam.QAdamOptimizer(net.parameters(), lr=0.01, warmup_steps=warmup,
                                weight_decay=0.01)
    net.with_bagua([opt], q_adam.QAdamAlgorithm(opt, hierarchical=False))
    if new_beta1 is not None:  # changed by the user after wrapping, on every rank
        for group in opt.param_groups:
            group["betas"] = (new_beta1, group["betas"][1])
    params = list(net.parameters())
    order = list(reversed(params))  # the order the tensors are registered in
    beta1, beta2 = opt.param_groups[0]["betas"]
    worst_m, worst_step_ratio, worst_update, frozen = 0.0, 0.0, 0.0, True
    v_end_of_warmup = None
    for step in range(steps):
        m_before = [opt.state[p]["exp_avg"].clone() for p in order]
        p_before = [p.detach().clone() for p in order]
        opt.zero_grad()
        loss_of(net, rank, step).backward()
        if step >= warmup:
            local = [torch.lerp(m, p.grad + 0.01 * pb, 1 - beta1)
                     for m, p, pb in zip(m_before, order, p_before)]
            want, quantum, chunk = bytegrad_reference(
                [padded(v, n) for v in gather(padded(flat(local), n))])
            got = flat(opt.state[p]["exp_avg"] for p in order)
            diff = (got - want[:got.numel()]).abs()
            per_chunk = torch.stack([diff[c * chunk:(c + 1) * chunk].max() if
                                     c * chunk < diff.numel() else torch.tensor(0.0)
                                     for c in range(n)])
            worst_m = max(worst_m, float(diff.max()))
            worst_step_ratio = max(worst_step_ratio, float((per_chunk / quantum).max()))
        opt.step()
        if step == warmup - 1:
            v_end_of_warmup = [opt.state[p]["exp_avg_sq"].clone() for p in order]
        if step >= warmup:
            t = opt.step_id
            for p, pb, v0 in zip(order, p_before, v_end_of_warmup):
                m = opt.state[p]["exp_avg"]
                frozen = frozen and torch.equal(opt.state[p]["exp_avg_sq"], v0)
                denom = (v0.sqrt() / math.sqrt(1 - beta2**t)).add_(1e-8)
                want_p = pb.addcdiv(m, denom, value=-0.01 / (1 - beta1**t))
                worst_update = max(worst_update, float((p.detach() - want_p).abs().max()))
    out.update(max_momentum_diff=worst_m, max_diff_in_quantization_steps=worst_step_ratio,
               max_update_diff=worst_update, variance_frozen=frozen,
               weights=flat(net.parameters()).tolist())


def case_qadam_new_betas(rank, out):
    case_qadam_compressed(rank, out, new_beta1=0.5)


def shift_one_peer(rank, n, step):
    slots = n if n % 2 == 0 else n + 1
    half = slots // 2
    s = step % half
    peer = half + (rank + s) % half if rank < half else (rank - half - s) % half
    return rank if peer >= n else peer


def reference_average(x, mode, round_, rank, n):
    if mode == "all":
        y = x.clone()
        dist.all_reduce(y)
        return y / n, -1
    peer = shift_one_peer(rank, n, round_)
    if peer == rank:
        return x.clone(), rank
    theirs = torch.empty_like(x)
    if rank < peer:
        dist.send(x, peer)
        dist.recv(theirs, peer)
    else:
        dist.recv(theirs, peer)
        dist.send(x, peer)
    return torch.stack([x, theirs]).sum(0) / 2, peer


def case_decentralized(rank, out, mode, interval, steps=7):
    n = dist.get_world_size()
    torch.manual_seed(100 + rank)  # different starting weights per rank: nothing hides
    net = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    ref = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    ref.load_state_dict(net.state_dict())
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    algorithm = decentralized.DecentralizedAlgorithm(hierarchical=False, peer_selection_mode=mode,
                                                     communication_interval=interval)
    net.with_bagua([opt], algorithm)
    # with_bagua broadcast rank 0's weights: the reference starts from them too.
    ref.load_state_dict(net.state_dict())
    worst_avg, worst_final, pairs_equal, rounds, peers = 0.0, 0.0, True, 0, []
    for step in range(steps):
        before = flat(net.parameters()).clone()
        opt.zero_grad()
        loss_of(net, rank, step).backward()
        after_backward = flat(net.parameters()).clone()
        communicates = step % interval == 0
        if communicates:
            want, peer = reference_average(before, mode, rounds, rank, n)
            rounds += 1
            peers.append(peer)
            everyone = gather(after_backward)
            if mode == "all":
                pairs_equal = pairs_equal and all(torch.equal(e, everyone[0]) for e in everyone)
            elif peer != rank:
                pairs_equal = pairs_equal and torch.equal(everyone[peer], after_backward)
        else:
            want = before
        worst_avg = max(worst_avg, float((after_backward - want).abs().max()))
        opt.step()
        # reference: x <- avg(x) - lr g(x_old)
        x = flat(ref.parameters())
        avg = reference_average(x, mode, rounds - 1, rank, n)[0] if communicates else x
        for p in ref.parameters():
            p.grad = None
        loss_of(ref, rank, step).backward()
        grads = flat(p.grad for p in ref.parameters())
        new = avg - 0.1 * grads
        offset = 0
        with torch.no_grad():
            for p in ref.parameters():
                p.copy_(new[offset:offset + p.numel()].view_as(p))
                offset += p.numel()
        worst_final = max(worst_final, float((flat(net.parameters()) -
                                              flat(ref.parameters())).abs().max()))
    out.update(max_average_diff=worst_avg, max_weight_diff=worst_final, pairs_equal=pairs_equal,
               peers=peers, weights=flat(net.parameters()).tolist())


def case_lpd(rank, out, steps=6, lr=0.1, optimizers=1):
    """Low-precision decentralized SGD against a simulation of every rank's
    replicas from every rank's gradients (gathered through torch's Gloo).
    With 2 optimizers, each steps half of the layers (as a GAN's would)."""
    n = dist.get_world_size()
    net = model().to(DEVICE)
    layers = [m for m in net if any(True for _ in m.parameters())]
    if optimizers == 1:
        opts = [torch.optim.SGD(net.parameters(), lr=lr, foreach=False)]
    else:
        halves = (layers[: len(layers) // 2], layers[len(layers) // 2:])
        opts = [torch.optim.SGD([p for m in half for p in m.parameters()], lr=lr, foreach=False)
                for half in halves]
    net.with_bagua(opts, decentralized.LowPrecisionDecentralizedAlgorithm(hierarchical=False))
    params = list(net.parameters())  # registered in forward order: one bucket, one chunk
    x0 = flat(params)
    own, left, right = ([x0.clone() for _ in range(n)] for _ in range(3))
    third, five_thirds = 1.0 / 3.0, -5.0 / 3.0
    worst = 0.0
    for step in range(steps):
        for opt in opts:
            opt.zero_grad()
        loss_of(net, rank, step).backward()
        grads = gather(flat(p.grad for p in params))
        for opt in opts:
            opt.step()
        x = [torch.add(own[r], grads[r], alpha=-lr) for r in range(n)]
        q = []
        for r in range(n):
            d = x[r] + left[r] * torch.tensor(third)
            d = d + right[r] * torch.tensor(third)
            d = d + own[r] * torch.tensor(five_thirds)
            q.append(roundtrip(d))
        for r in range(n):
            left[r] = left[r] + q[(r - 1) % n]
            right[r] = right[r] + q[(r + 1) % n]
            own[r] = own[r] + q[r]
        worst = max(worst, float((flat(params) - own[rank]).abs().max()))
    out.update(max_weight_diff=worst, weights=flat(params).tolist())


def case_lpd_two_optimizers(rank, out):
    case_lpd(rank, out, optimizers=2)


def case_lpd_load_after_wrapping(rank, out):
    import warnings

    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with warnings.catch_warnings(record=True) as before:
        warnings.simplefilter("always")
        net.load_state_dict(model(seed=6).state_dict())  # before wrapping: fine
        net.with_bagua([opt], decentralized.LowPrecisionDecentralizedAlgorithm(
            hierarchical=False))
    with warnings.catch_warnings(record=True) as after:
        warnings.simplefilter("always")
        net.load_state_dict(model(seed=7).state_dict())
    said = lambda caught: any("load_state_dict after with_bagua" in str(w.message)
                              for w in caught)
    out.update(warned_before=said(before), warned_after=said(after))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True)
    p.add_argument("--mode", default="all")
    p.add_argument("--interval", type=int, default=1)
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    global DEVICE
    DEVICE = job_device(args.device)
    bagua.init_process_group()
    rank = bagua.get_rank()
    out = {"rank": rank}
    if args.case == "decentralized":
        case_decentralized(rank, out, args.mode, args.interval)
    else:
        globals()[f"case_{args.case}"](rank, out)
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
