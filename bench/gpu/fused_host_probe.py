"""Host time of the fused step on issue 28's 100,000-tensor set (sizes
64..4096, seed 0; `tiny`: one element each), AdamW and SGD momentum, with
check_flatten False and True, Python's garbage collector on and off: per
configuration the median host time of step() (before the synchronize), the
median step time (after it) and the first 12 host times; one cProfile of
AdamW with check_flatten=False. One process, one GPU:

    python3 bench/gpu/fused_host_probe.py [tiny]
"""
import cProfile
import gc
import pstats
import sys
import time

import torch

from bagua.torch_api.contrib import fuse_optimizer


def make_optimizer(kind, sizes, exact):
    params = [torch.nn.Parameter(torch.randn(n, device="cuda")) for n in sizes]
    for p in params:
        p.grad = torch.randn_like(p)
    base = torch.optim.AdamW(params, lr=1e-3) if kind == "adamw" else \
        torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    return fuse_optimizer(base, check_flatten=exact)


def timed_steps(opt, steps=30):
    """(host ms, step ms) of each step: step() returned, then synchronized."""
    host, total = [], []
    for _ in range(steps):
        t = time.perf_counter()
        opt.step()
        h = time.perf_counter()
        torch.cuda.synchronize()
        host.append((h - t) * 1e3)
        total.append((time.perf_counter() - t) * 1e3)
    return host, total


def main():
    torch.manual_seed(0)
    tiny = len(sys.argv) > 1 and sys.argv[1] == "tiny"
    sizes = [1] * 100000 if tiny else torch.randint(64, 4097, (100000,)).tolist()
    for kind in ("adamw", "sgd"):
        for exact in (False, True):
            opt = make_optimizer(kind, sizes, exact)
            for _ in range(3):
                opt.step()
            torch.cuda.synchronize()
            for label in ("gc on", "gc off"):
                if label == "gc off":
                    gc.disable()
                host, total = timed_steps(opt)
                gc.enable()
                hs, ts = sorted(host), sorted(total)
                print(f"{'tiny' if tiny else 'small set'} {kind} check_flatten={exact} {label}: "
                      f"host median {hs[15]:.3f} (min {hs[0]:.3f}, max {hs[-1]:.3f}) ms; step "
                      f"median {ts[15]:.3f} (min {ts[0]:.3f}) ms; host seq "
                      f"{' '.join('%.1f' % x for x in host[:12])}")
            if kind == "adamw" and not exact:
                profile = cProfile.Profile()
                profile.enable()
                for _ in range(10):
                    opt.step()
                torch.cuda.synchronize()
                profile.disable()
                pstats.Stats(profile).sort_stats("tottime").print_stats(6)
            del opt
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
