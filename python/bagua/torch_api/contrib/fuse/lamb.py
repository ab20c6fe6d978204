"""LAMB (You et al., "Large Batch Optimization for Deep Learning", arXiv
1904.00962), per tensor, in plain PyTorch: the reference of the native
kernel (kernels/optim/, `fuse_optimizer` runs it there, never on a
flattened tensor: the trust ratio is each tensor's own).

    m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2
    u = (m / bc1) / (sqrt(v / bc2) + eps) + weight_decay p    (bc = 1 - b^t; 1 without bias_correction)
    r = |p| / |u|  (1 when either is 0; at most max_trust when max_trust > 0)
    p = p - lr r u
"""
import torch


class Lamb(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0,
                 bias_correction=True, max_trust=0.0):
        if lr < 0.0:
            raise ValueError(f"Lamb: lr={lr}; expected >= 0")
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"Lamb: betas={betas}; expected each in [0, 1)")
        if eps <= 0.0:
            raise ValueError(f"Lamb: eps={eps}; expected > 0")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        bias_correction=bias_correction, max_trust=max_trust)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise ValueError("Lamb: sparse gradients are not supported")
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p,
                                                           memory_format=torch.preserve_format)
                state["step"] += 1
                self._update(p, state, group, b1, b2, float(state["step"]))
        return loss

    @staticmethod
    def _update(p, state, group, b1, b2, step):
        g = p.grad.float()
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        bc1 = 1 - b1 ** step if group["bias_correction"] else 1.0
        bc2 = 1 - b2 ** step if group["bias_correction"] else 1.0
        w = p.float()
        u = (m.float() * (1 / bc1)) / ((v.float() * (1 / bc2)).sqrt() + group["eps"])
        u.add_(w, alpha=group["weight_decay"])
        pn, un = w.norm(), u.norm()
        r = torch.where((pn > 0) & (un > 0), pn / un, torch.ones_like(pn))
        if group["max_trust"] > 0:
            r = r.clamp(max=group["max_trust"])
        p.copy_(w - group["lr"] * r * u)
