"""Correctness of the fused optimizer on the benchmark's device (part of
fused_optimizer_bench.py): each path against the unfused optimizer over 100
steps (50 in bf16) of tests/python/fused_support.py's problem, and the CUDA
kernels against their CPU reference, bit for bit, through bagua._C.OptimList."""
import torch

from fused_support import Lion, build, make_params, max_rel_diff, train

from bagua.torch_api.contrib import Lamb, fuse_optimizer
from bagua.torch_api.contrib.fuse import native


def log(*args):
    print(*args, flush=True)


def check_correctness(device):
    cases = [("sgd", torch.optim.SGD, dict(lr=0.01, momentum=0.9, nesterov=True)),
             ("adamw", torch.optim.AdamW, dict(lr=0.01, amsgrad=True)),
             ("adam", torch.optim.Adam, dict(lr=0.01)),
             ("adagrad", torch.optim.Adagrad, dict(lr=0.05)),
             ("rmsprop", torch.optim.RMSprop, dict(lr=0.001, momentum=0.5)),
             ("lion", Lion, dict(lr=0.001)), ("lamb", Lamb, dict(lr=0.01)),
             ("lamb batched", Lamb, dict(lr=0.01))]
    # "lamb batched": LAMB's persistent kernel (batches of at most 20,000
    # elements in 1024-element items; the problem's sizes make two batches).
    batched = dict(LAMB_BATCH_ELEMS=20000, LAMB_CHUNK_ELEMS=1024)
    out = {}
    for dtype, tol in ((torch.float32, 1e-6), (torch.bfloat16, 5e-2)):
        for name, cls, kw in cases:
            tuning = batched if name == "lamb batched" else {}
            saved = {k: getattr(native, k) for k in tuning}
            a = make_params(dtype, device=device)
            b = make_params(dtype, device=device)
            gen = torch.Generator().manual_seed(1)
            target = [torch.randn(p.shape, generator=gen).to(device) for p in a]
            oa, ob = build(cls, a, **kw), fuse_optimizer(build(cls, b, **kw))
            try:
                for k, v in tuning.items():
                    setattr(native, k, v)
                for opt, ps in ((oa, a), (ob, b)):
                    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.7)
                    train(opt, ps, 100 if dtype == torch.float32 else 50, target, sched)
            finally:
                for k, v in saved.items():
                    setattr(native, k, v)
            err = max_rel_diff(b, a)
            key = f"{name} {str(dtype).split('.')[-1]}"
            out[key] = dict(max_rel_diff=err, tolerance=tol, ok=err <= tol)
            log(f"  {key:18s} max rel diff {err:.3g} (tolerance {tol:g}) "
                f"{'ok' if err <= tol else 'FAIL'}")
    if device.type == "cuda":
        bits = kernels_bitwise(device)
        out["kernels gpu == cpu bitwise"] = bits
        log(f"  CUDA kernels give the CPU reference's bits: {bits['all']}")
    return out


SIZES = [1, 3, 1000, 4097, 8193, 100003]


def _ieee(which, step, p, g, st):
    """The kernels' element math (kernels/optim/optim_math.h) in torch fp32
    operations, one rounding each (no fused multiply-add: no alpha=, no
    addcmul; sqrt through float64): a third opinion when the GPU and the CPU
    disagree."""
    f = torch.float32

    def c(x):
        return torch.tensor(x, dtype=f)

    def sqrt(x):  # torch's CPU sqrt is not correctly rounded; via double it is
        return x.double().sqrt().float()
    if which == "sgd":  # lr 0.1, momentum 0.9, dampening 0, weight decay 0.01, nesterov
        g = g + c(0.01) * p
        buf = g.clone() if step == 1 else st[0] * c(0.9) + c(1.0) * g
        g = g + c(0.9) * buf
        return p + c(-0.1) * g, [buf, st[1], st[2]]
    if which == "adam":  # lr 0.01, betas (0.9, 0.999), eps 1e-8, decoupled wd 0.1, amsgrad
        b1, b2, lr = 0.9, 0.999, 0.01
        bc1, bc2 = 1.0 - b1 ** step, 1.0 - b2 ** step
        p = p * c(1.0 - lr * 0.1)
        w = c(1.0 - b1)
        m = st[0] + w * (g - st[0])
        v = st[1] * c(b2) + c(1.0 - b2) * g * g
        vmax = torch.where((st[2] > v) | torch.isnan(st[2]), st[2], v)
        denom = sqrt(vmax) / c(bc2 ** 0.5) + c(1e-8)
        return p + c(-(lr / bc1)) * (m / denom), [m, v, vmax]
    # adagrad: lr 0.1, lr_decay 0.01, no weight decay, eps 1e-10
    clr = 0.1 / (1.0 + (step - 1.0) * 0.01)
    s = st[0] + c(1.0) * g * g
    return p + c(-clr) * (g / (sqrt(s) + c(1e-10))), [s, st[1], st[2]]


def _ulps(a, b):
    """Largest distance in units in the last place between two tensors of one dtype."""
    it = torch.int32 if a.dtype == torch.float32 else torch.int16
    ai, bi = a.contiguous().view(it).long(), b.contiguous().view(it).long()
    # Map the sign-magnitude bit patterns onto one ordered integer line.
    top = 1 << (31 if it == torch.int32 else 15)
    ai = torch.where(ai < 0, -(ai + top), ai)
    bi = torch.where(bi < 0, -(bi + top), bi)
    return int((ai - bi).abs().max()) if a.numel() else 0


def kernels_bitwise(device):
    """SGD, Adam and Adagrad through bagua._C.OptimList on the GPU and on the
    CPU from the same values, 3 steps, each case from fresh tensors: the
    same bits (docs: kernels/README.md). On device "cpu" both lists are CPU
    lists (the check checking itself, tests/python/test_fused_kernels.py). Each case reports where the two
    differ (slot, tensor, element, ULPs) and which side one rounding per
    operation in torch fp32 (_ieee) agrees with, so a failure says whether
    the kernel or the reference is off."""
    from bagua import _C

    names = {torch.float32: "float32", torch.bfloat16: "bfloat16"}
    slot_names = ("param", "grad", "state0", "state1", "state2")
    out = {}
    for dtype in (torch.float32, torch.bfloat16):
        for which in ("sgd", "adam", "adagrad"):
            gen = torch.Generator().manual_seed(3)
            host = [[torch.randn(n, generator=gen).to(dtype) for n in SIZES] for _ in range(2)]
            host += [[torch.rand(n, generator=gen).to(dtype) for n in SIZES] for _ in range(3)]
            emu = [[t.float().clone() for t in slot] for slot in host]
            dev = [[t.to(device, copy=True) for t in slot] for slot in host]
            inputs_equal = all(torch.equal(h, d.cpu()) for sh, sd in zip(host, dev)
                               for h, d in zip(sh, sd))
            slots = 1 if which != "adam" else 3
            lists = []
            index = -1 if device.type == "cpu" else device.index or 0
            for tensors, index in ((host, -1), (dev, index)):
                entries = [(n, tensors[0][i].data_ptr(), tensors[1][i].data_ptr(),
                            *[tensors[2 + k][i].data_ptr() for k in range(slots)],
                            *([0] * (3 - slots)), 0) for i, n in enumerate(SIZES)]
                lists.append(_C.OptimList(index, entries, names[dtype], names[dtype]))
            stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
            for step in (1, 2, 3):
                for olist, st in ((lists[0], 0), (lists[1], stream)):
                    if which == "sgd":
                        olist.sgd(0.1, 0.9, 0.0, 0.01, True, False, step == 1, stream=st)
                    elif which == "adam":
                        olist.adam(0.01, 0.9, 0.999, 1e-8, 0.1, float(step), True, True, False,
                                   stream=st)
                    else:
                        olist.adagrad(0.1, 0.01, 0.0, 1e-10, float(step), False, stream=st)
                for i in range(len(SIZES)):
                    p, new = _ieee(which, step, emu[0][i], emu[1][i],
                                   [emu[2 + k][i] for k in range(3)])
                    # Stored in the tensors' dtype after every step, as the kernels do.
                    emu[0][i] = p.to(dtype).float()
                    for k in range(3):
                        if k < slots:
                            emu[2 + k][i] = new[k].to(dtype).float()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            case = dict(inputs_equal=inputs_equal, gpu_equals_cpu=True, differing={})
            cpu_ieee = gpu_ieee = True
            for s, (sh, sd, se) in enumerate(zip(host, dev, emu)):
                for i, (h, d, e) in enumerate(zip(sh, sd, se)):
                    d = d.cpu()
                    e = e.to(dtype)
                    cpu_ieee = cpu_ieee and torch.equal(h, e)
                    gpu_ieee = gpu_ieee and torch.equal(d, e)
                    if torch.equal(h, d):
                        continue
                    case["gpu_equals_cpu"] = False
                    bad = (h != d).nonzero().flatten()
                    j = int(bad[0])
                    case["differing"][f"{slot_names[s]}[{SIZES[i]}]"] = dict(
                        elements=int(bad.numel()), max_ulps=_ulps(h, d), first=j,
                        cpu=float(h[j]), gpu=float(d[j]), ieee=float(e[j]))
            case.update(cpu_equals_ieee_emulation=cpu_ieee, gpu_equals_ieee_emulation=gpu_ieee)
            key = f"{which} {names[dtype]}"
            out[key] = case
            log(f"  bitwise {key:16s} gpu == cpu: {case['gpu_equals_cpu']}  (inputs equal "
                f"{inputs_equal}; cpu == ieee emulation {cpu_ieee}, gpu == ieee emulation "
                f"{gpu_ieee}){'' if case['gpu_equals_cpu'] else ' ' + str(case['differing'])}")
    out["all"] = all(c["gpu_equals_cpu"] for c in out.values())
    return out
