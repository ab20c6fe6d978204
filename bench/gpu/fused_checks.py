"""Correctness of the fused optimizer on the benchmark's device (part of
fused_optimizer_bench.py): each path against the unfused optimizer over 100
steps (50 in bf16) of tests/python/fused_support.py's problem, and the CUDA
kernels against their CPU reference, bit for bit, through bagua._C.OptimList."""
import torch

from fused_support import Lion, build, make_params, max_rel_diff, train

from bagua.torch_api.contrib import Lamb, fuse_optimizer


def log(*args):
    print(*args, flush=True)


def check_correctness(device):
    cases = [("sgd", torch.optim.SGD, dict(lr=0.01, momentum=0.9, nesterov=True)),
             ("adamw", torch.optim.AdamW, dict(lr=0.01, amsgrad=True)),
             ("adam", torch.optim.Adam, dict(lr=0.01)),
             ("adagrad", torch.optim.Adagrad, dict(lr=0.05)),
             ("rmsprop", torch.optim.RMSprop, dict(lr=0.001, momentum=0.5)),
             ("lion", Lion, dict(lr=0.001)), ("lamb", Lamb, dict(lr=0.01))]
    out = {}
    for dtype, tol in ((torch.float32, 1e-6), (torch.bfloat16, 5e-2)):
        for name, cls, kw in cases:
            a = make_params(dtype, device=device)
            b = make_params(dtype, device=device)
            gen = torch.Generator().manual_seed(1)
            target = [torch.randn(p.shape, generator=gen).to(device) for p in a]
            oa, ob = build(cls, a, **kw), fuse_optimizer(build(cls, b, **kw))
            for opt, ps in ((oa, a), (ob, b)):
                sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.7)
                train(opt, ps, 100 if dtype == torch.float32 else 50, target, sched)
            err = max_rel_diff(b, a)
            key = f"{name} {str(dtype).split('.')[-1]}"
            out[key] = dict(max_rel_diff=err, tolerance=tol, ok=err <= tol)
            log(f"  {key:18s} max rel diff {err:.3g} (tolerance {tol:g}) "
                f"{'ok' if err <= tol else 'FAIL'}")
    if device.type == "cuda":
        out["kernels gpu == cpu bitwise"] = kernels_bitwise(device)
        log(f"  CUDA kernels give the CPU reference's bits: {out['kernels gpu == cpu bitwise']}")
    return out


def kernels_bitwise(device):
    """SGD, Adam and Adagrad through bagua._C.OptimList on the GPU and on the
    CPU from the same values: the same bits (docs: kernels/README.md)."""
    from bagua import _C

    ok = True
    sizes = [1, 3, 1000, 4097, 8193, 100003]
    for dtype in (torch.float32, torch.bfloat16):
        gen = torch.Generator().manual_seed(3)
        host = [[torch.randn(n, generator=gen).to(dtype) for n in sizes] for _ in range(2)]
        host += [[torch.rand(n, generator=gen).to(dtype) for n in sizes] for _ in range(3)]
        dev = [[t.to(device) for t in slot] for slot in host]
        name = {torch.float32: "float32", torch.bfloat16: "bfloat16"}[dtype]
        for which in ("sgd", "adam", "adagrad"):
            lists = []
            for tensors, index in ((host, -1), (dev, device.index or 0)):
                slots = 1 if which != "adam" else 3
                entries = [(sizes[i], tensors[0][i].data_ptr(), tensors[1][i].data_ptr(),
                            *[tensors[2 + k][i].data_ptr() for k in range(slots)],
                            *([0] * (3 - slots)), 0) for i in range(len(sizes))]
                lists.append(_C.OptimList(index, entries, name, name))
            for step in (1, 2, 3):
                for olist, stream in ((lists[0], 0), (lists[1],
                                                      torch.cuda.current_stream().cuda_stream)):
                    if which == "sgd":
                        olist.sgd(0.1, 0.9, 0.0, 0.01, True, False, step == 1, stream=stream)
                    elif which == "adam":
                        olist.adam(0.01, 0.9, 0.999, 1e-8, 0.1, float(step), True, True, False,
                                   stream=stream)
                    else:
                        olist.adagrad(0.1, 0.01, 0.0, 1e-10, float(step), False, stream=stream)
            torch.cuda.synchronize()
            for slot_h, slot_d in zip(host, dev):
                for h, d in zip(slot_h, slot_d):
                    ok = ok and torch.equal(h.view(torch.int16 if dtype != torch.float32
                                                   else torch.int32),
                                            d.cpu().view(torch.int16 if dtype != torch.float32
                                                         else torch.int32))
    return ok
