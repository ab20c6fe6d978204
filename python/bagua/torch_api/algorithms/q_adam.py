"""QAdam (the original's import path): Adam whose momentum is averaged in 8
bits after a warm-up, with the variance frozen at its warm-up value.

- Steps 1..warmup_steps: the gradients are averaged in full precision
  (gradient allreduce) and the optimizer is Adam (L2 weight decay added to
  the gradient, as torch.optim.Adam).
- From step warmup_steps + 1: during backward, as each gradient is ready,
  every rank updates its momentum from its own gradient,
  m <- beta1 m + (1 - beta1)(g + weight_decay p); the runtime averages the
  momentum with ByteGrad's 8-bit min-max operation (optionally with error
  feedback); the step applies p <- p - lr/(1 - beta1^t) m / (sqrt(v)/sqrt(1 -
  beta2^t) + eps) with v as it was at the end of the warm-up.

Fixed against the original (docs/algorithms.md): weight decay is applied
after the warm-up too (the original dropped it), the moments are updated at
every step including the one at the boundary (the original skipped it), and
a coordinate whose variance is exactly 0 at the end of the warm-up (its
gradient was always 0: a dead unit) is not updated afterwards (its averaged
momentum is only quantization noise, and noise / eps diverged).
"""
import math

import torch

from .base import AlgorithmImpl
from .native import NativeAlgorithm, NativeAlgorithmImpl


class QAdamOptimizer(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, warmup_steps=100, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0):
        if lr <= 0.0:
            raise ValueError(f"QAdamOptimizer: lr must be positive, got {lr}")
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"QAdamOptimizer: betas must be in [0, 1), got {betas}")
        if eps < 0.0 or weight_decay < 0.0:
            raise ValueError(f"QAdamOptimizer: eps and weight_decay must be >= 0, got {eps}, "
                             f"{weight_decay}")
        if int(warmup_steps) < 1:
            raise ValueError(f"QAdamOptimizer: warmup_steps must be at least 1 (the variance is "
                             f"estimated during the warm-up and then frozen), got {warmup_steps}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.warmup_steps = int(warmup_steps)
        self.step_id = 0
        # Set by QAdamAlgorithm once it averaged this step's momentum.
        self._momentum_averaged = False
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p):
        state = self.state[p]
        if "exp_avg" not in state:
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)

    def __setstate__(self, state):
        super().__setstate__(state)

    def state_dict(self):
        out = super().state_dict()
        out["qadam"] = {"step_id": self.step_id, "warmup_steps": self.warmup_steps}
        return out

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        extra = state_dict.pop("qadam", None)
        super().load_state_dict(state_dict)
        if extra is not None:
            self.step_id = extra["step_id"]

    @property
    def in_warmup(self):
        """True while the next step is a warm-up (Adam) step."""
        return self.step_id < self.warmup_steps

    @torch.no_grad()
    def update_momentum(self, p, group):
        """m <- beta1 m + (1 - beta1)(g + weight_decay p): the local update that
        precedes the momentum's averaging after the warm-up."""
        grad = p.grad
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        self.state[p]["exp_avg"].lerp_(grad, 1 - group["betas"][0])

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        warmup = self.in_warmup
        self.step_id += 1
        t = self.step_id
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("QAdamOptimizer does not support sparse gradients")
                self._init_state(p)
                state = self.state[p]
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                if warmup:
                    grad = p.grad
                    if group["weight_decay"] != 0:
                        grad = grad.add(p, alpha=group["weight_decay"])
                    exp_avg.lerp_(grad, 1 - beta1)
                    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                else:
                    if t == self.warmup_steps + 1:
                        # A coordinate whose gradient was always exactly 0 in the
                        # warm-up (a dead unit) has v = 0: its averaged momentum is
                        # quantization noise, which m / (sqrt(v) + eps) would turn
                        # into a step of lr * noise / eps. It gets no update.
                        exp_avg_sq.masked_fill_(exp_avg_sq == 0, float("inf"))
                    if not self._momentum_averaged:
                        self.update_momentum(p, group)  # used without QAdamAlgorithm
                bias_correction1 = 1 - beta1**t
                bias_correction2_sqrt = math.sqrt(1 - beta2**t)
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(group["eps"])
                p.addcdiv_(exp_avg, denom, value=-group["lr"] / bias_correction1)
        self._momentum_averaged = False
        return loss


class QAdamAlgorithmImpl(NativeAlgorithmImpl):
    """Warm-up: the gradients through the runtime's gradient allreduce.
    After: each momentum through the runtime's "qadam" (ByteGrad on m)."""

    def __init__(self, process_group, optimizer, options):
        super().__init__(process_group, "qadam", options)
        self.optimizer = optimizer
        # By index: with_bagua's state broadcast (load_state_dict on ranks
        # other than 0) replaces the group dicts, and a user may change a
        # group's betas or weight decay later; the live dict is read per use.
        self._group_index = {p: i for i, g in enumerate(optimizer.param_groups)
                             for p in g["params"]}
        self._warmup_built = None

    def need_reset(self):
        return self._warmup_built is not None and self._warmup_built != self.optimizer.in_warmup

    def init_tensors(self, bagua_ddp):
        from ..tensor import BaguaTensor

        self._warmup_built = self.optimizer.in_warmup
        params = bagua_ddp.bagua_build_params()
        missing = [n for n, p in params if p not in self._group_index]
        if missing:
            raise ValueError(f"QAdamAlgorithm: parameters {missing[:5]} are not in the "
                             "QAdamOptimizer; every trained parameter must be")
        if self._warmup_built:
            return AlgorithmImpl.init_tensors(self, bagua_ddp)
        tensors = [BaguaTensor(n, p, getter=lambda p: self.optimizer.state[p]["exp_avg"],
                               setter=None) for n, p in reversed(params)]
        self._communication_tensor_names = {t.bagua_tensor_name for t in tensors}
        return tensors

    def make_backend(self, bagua_ddp, buckets):
        from ..data_parallel.native_backend import NativeBackend

        tensors = [t for bucket in buckets for t in bucket.tensors]
        if self._warmup_built:
            return self.warmup_backend(bagua_ddp, tensors)
        return NativeBackend(bagua_ddp, "qadam", self.options, tensors)

    def init_backward_hook(self, bagua_ddp):
        if self._warmup_built:
            return AlgorithmImpl.init_backward_hook(self, bagua_ddp)

        def hook(parameter_name, parameter):
            group = self.optimizer.param_groups[self._group_index[parameter]]
            self.optimizer.update_momentum(parameter, group)
            bagua_ddp._sync_stream()
            bagua_ddp._bagua_backend.mark_communication_ready(parameter_name)

        return hook

    def init_post_backward_hook(self, bagua_ddp):
        def hook():
            bagua_ddp._bagua_backend.wait_pending_comm_ops()
            self.optimizer._momentum_averaged = not self._warmup_built

        return hook


class QAdamAlgorithm(NativeAlgorithm):
    registry_name = "qadam"

    def __init__(self, q_adam_optimizer, hierarchical: bool = True,
                 error_feedback: bool = False, **options):
        if not isinstance(q_adam_optimizer, QAdamOptimizer):
            raise TypeError(f"QAdamAlgorithm needs a QAdamOptimizer, got "
                            f"{type(q_adam_optimizer).__name__}")
        super().__init__(hierarchical=hierarchical, error_feedback=error_feedback, **options)
        self.optimizer = q_adam_optimizer

    def reify(self, process_group):
        return QAdamAlgorithmImpl(process_group, self.optimizer, self.options)
