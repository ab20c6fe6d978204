"""Host time of the fused step on issue 28's 100,000-tensor set (sizes
64..4096, seed 0; `tiny`: one element each), AdamW and SGD momentum, with
check_flatten False and True, Python's garbage collector on and off: per
configuration the median host time of step() (before the synchronize), the
median step time (after it) and the first 12 host times; one cProfile of
AdamW with check_flatten=False. One process, one GPU:

    python3 bench/gpu/fused_host_probe.py [tiny]
"""
import cProfile, gc, pstats, sys, time, torch
from bagua.torch_api.contrib import fuse_optimizer
torch.manual_seed(0)
tiny = len(sys.argv) > 1 and sys.argv[1] == "tiny"
sizes = [1] * 100000 if tiny else torch.randint(64, 4097, (100000,)).tolist()
for kind in ("adamw", "sgd"):
    for exact in (False, True):
        ps = [torch.nn.Parameter(torch.randn(n, device="cuda")) for n in sizes]
        for p in ps: p.grad = torch.randn_like(p)
        base = torch.optim.AdamW(ps, lr=1e-3) if kind == "adamw" else torch.optim.SGD(ps, lr=1e-3, momentum=0.9)
        opt = fuse_optimizer(base, check_flatten=exact)
        for _ in range(3): opt.step()
        torch.cuda.synchronize()
        for label in ("gc on", "gc off"):
            if label == "gc off": gc.disable()
            host, total = [], []
            for _ in range(30):
                t = time.perf_counter(); opt.step(); h = time.perf_counter(); torch.cuda.synchronize(); e = time.perf_counter()
                host.append((h - t) * 1e3); total.append((e - t) * 1e3)
            gc.enable()
            hs, ts = sorted(host), sorted(total)
            print(f"{'tiny' if tiny else 'small set'} {kind} check_flatten={exact} {label}: host median {hs[15]:.3f} (min {hs[0]:.3f}, max {hs[-1]:.3f}) ms; "
                  f"step median {ts[15]:.3f} (min {ts[0]:.3f}) ms; host seq {' '.join('%.1f' % x for x in host[:12])}")
        if kind == "adamw" and not exact:
            pr = cProfile.Profile(); pr.enable()
            for _ in range(10): opt.step()
            torch.cuda.synchronize(); pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(6)
        del opt, base, ps
        torch.cuda.empty_cache()
