"""Shared pieces of the fused-optimizer tests: a random problem with
several param groups, optimizers written in plain PyTorch (Lion, which is
element-wise, and a LARS-style one with per-tensor norms, which is not), and
a driver that trains the fused and the unfused optimizer side by side."""
import torch

from bagua.torch_api.contrib import fuse_optimizer


class Lion(torch.optim.Optimizer):
    """Lion (Chen et al., arXiv 2302.06675) as third-party code writes it."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                update = m.mul(b1).add_(p.grad, alpha=1 - b1).sign_()
                p.add_(update, alpha=-group["lr"])
                m.mul_(b2).add_(p.grad, alpha=1 - b2)


class NormScaledSgd(torch.optim.Optimizer):
    """A LARS-style step: each tensor's update scaled by |p| / |g|."""

    def __init__(self, params, lr=0.01):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    ratio = p.norm() / p.grad.norm().clamp_min(1e-12)
                    p.add_(p.grad, alpha=-group["lr"] * float(ratio))


SIZES = [(1,), (7,), (33, 5), (64,), (128, 96), (5000,), (3, 17, 11), (20000,)]


def make_params(dtype=torch.float32, seed=0, sizes=SIZES, device="cpu"):
    gen = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter((torch.randn(s, generator=gen) * (0.1 + i)).to(device, dtype))
            for i, s in enumerate(sizes)]


def groups_of(params, **extra):
    """Three param groups: weight decay on, off (another lr), and the rest."""
    n = len(params)
    return [dict(params=params[: n // 3], weight_decay=0.01, **extra),
            dict(params=params[n // 3: 2 * n // 3], weight_decay=0.0, lr_scale=0.5),
            dict(params=params[2 * n // 3:])]


def build(cls, params, **kwargs):
    groups = groups_of(params)
    for g in groups:
        scale = g.pop("lr_scale", 1.0)
        if "lr" in kwargs:
            g["lr"] = kwargs["lr"] * scale
    return cls(groups, **kwargs)


def loss_of(params, target):
    """A quadratic problem with a different curvature per tensor."""
    return sum(((p.float() - t) ** 2 * (1 + i)).sum() for i, (p, t) in
               enumerate(zip(params, target)))


def train(opt, params, steps, target, sched=None, each=None):
    for step in range(steps):
        opt.zero_grad()  # torch's default: set_to_none=True
        loss_of(params, target).backward()
        if each is not None:
            each(step, opt, params)
        opt.step()
        if sched is not None:
            sched.step()


def max_rel_diff(a, b):
    """Largest |a - b| of a tensor relative to that tensor's largest value."""
    return max(((x.detach().double() - y.detach().double()).abs().max() /
                y.detach().double().abs().max().clamp_min(1e-30)).item() for x, y in zip(a, b))


def many_small_with_changes(n, dropped, replaced, moved):
    """n two-element parameters, SGD momentum unfused (a, oa) and fused (b,
    ob), 3 steps of random gradients in place; at the second step parameter
    `dropped` loses its gradient, `replaced` gets a new gradient tensor and
    `moved` new .data. Returns (a, b, ob)."""
    torch.manual_seed(0)
    a = [torch.nn.Parameter(torch.randn(2)) for _ in range(n)]
    b = [torch.nn.Parameter(p.detach().clone()) for p in a]
    oa = torch.optim.SGD(a, lr=0.1, momentum=0.9)
    ob = fuse_optimizer(torch.optim.SGD(b, lr=0.1, momentum=0.9))
    for step in range(3):
        grads = [torch.randn(2) for _ in range(n)]
        for params in (a, b):
            for p, g in zip(params, grads):
                if p.grad is None:
                    p.grad = g.clone()
                else:
                    p.grad.copy_(g)
        if step == 1:
            for params in (a, b):
                params[dropped].grad = None
                params[replaced].grad = grads[replaced].clone() * 2
                with torch.no_grad():
                    params[moved].data = params[moved].detach().clone()
        oa.step()
        ob.step()
    return a, b, ob
