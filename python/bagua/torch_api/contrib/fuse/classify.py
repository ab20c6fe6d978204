"""Which path an optimizer takes in the fused optimizer: element-wise
optimizers run on flat buffers, others per tensor, never flattened.

torch's element-wise optimizers are known by exact type (a subclass may
override step, so it is probed like any other). An optimizer known to keep
per-tensor quantities (norms, factored moments, closures) is never probed.
Any other optimizer is element-wise when the user declares it
(`fuse_optimizer(..., elementwise=True)`) or when a one-time probe shows it:
a few steps on small random copies (tensors of very different scales and
shapes), once per tensor and once on one flat tensor, equal within 1e-6.
"""
import inspect
import logging

import torch

_logger = logging.getLogger("bagua")

ELEMENTWISE = tuple(getattr(torch.optim, name) for name in (
    "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "NAdam", "RAdam", "Adamax", "Adadelta",
    "ASGD", "Rprop") if hasattr(torch.optim, name))

# Known not element-wise: per-tensor norms or factored statistics (LAMB,
# LARS, Adafactor, Shampoo, Muon...), closures (LBFGS), sparse gradients.
PER_TENSOR = tuple(getattr(torch.optim, name) for name in ("LBFGS", "SparseAdam", "Adafactor")
                   if hasattr(torch.optim, name))
_PER_TENSOR_NAMES = ("lamb", "lars", "lion_per_tensor", "adafactor", "shampoo", "muon", "sm3",
                     "novograd", "adabelief_rect")

PROBE_TOLERANCE = 1e-6
_PROBE_SHAPES = ((3, 4), (5,), (2, 3, 2), (1,), (7,))
_PROBE_SCALES = (0.01, 1.0, 100.0, 3.0, 0.5)
_PROBE_STEPS = 3


def known_kind(optimizer):
    """'elementwise', 'per_tensor' or None (unknown: declare or probe)."""
    cls = type(optimizer)
    if cls in ELEMENTWISE:
        return "elementwise"
    if isinstance(optimizer, PER_TENSOR) or any(n in cls.__name__.lower()
                                                for n in _PER_TENSOR_NAMES):
        return "per_tensor"
    return None


def _constructor_kwargs(optimizer, group):
    """The group's hyperparameters that the optimizer's constructor takes."""
    try:
        names = inspect.signature(type(optimizer).__init__).parameters
    except (TypeError, ValueError):
        names = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in names.values())
    return {k: v for k, v in group.items()
            if k not in ("params", "param_names") and (takes_any or k in names)}


def probe(optimizer, group, device):
    """(True, "") when the optimizer's step on one flat tensor equals its
    steps per tensor on random fp32 copies (group's hyperparameters, on
    `device`), and so do its steps with each tensor in a param group of its
    own (a group-wide statistic, such as a clip of the group's gradient
    norm, would pass the first test: fused runs step as groups of their
    own), else (False, the reason)."""
    gen = torch.Generator().manual_seed(0)
    base = [torch.randn(s, generator=gen) * c for s, c in zip(_PROBE_SHAPES, _PROBE_SCALES)]
    per = [torch.nn.Parameter(b.clone().to(device)) for b in base]
    alone = [torch.nn.Parameter(b.clone().to(device)) for b in base]
    flat = torch.nn.Parameter(torch.cat([b.reshape(-1) for b in base]).to(device))
    kwargs = _constructor_kwargs(optimizer, group)
    try:
        a = type(optimizer)(per, **kwargs)
        b = type(optimizer)([flat], **kwargs)
        c = type(optimizer)([{"params": [p]} for p in alone], **kwargs)
    except Exception as e:  # noqa: BLE001 - any constructor failure means: cannot probe
        return False, (f"could not build a {type(optimizer).__name__} on probe tensors with the "
                       f"group's hyperparameters {sorted(kwargs)}: {e!r}")
    try:
        for _ in range(_PROBE_STEPS):
            grads = [torch.randn(s, generator=gen) * c
                     for s, c in zip(_PROBE_SHAPES, _PROBE_SCALES)]
            for p, q, g in zip(per, alone, grads):
                p.grad = g.to(device)
                q.grad = g.to(device)
            flat.grad = torch.cat([g.reshape(-1) for g in grads]).to(device)
            a.step()
            b.step()
            c.step()
    except Exception as e:  # noqa: BLE001 - a step that fails on copies is not element-wise
        return False, f"its step failed on the probe tensors: {e!r}"
    got = flat.detach().cpu().split([p.numel() for p in per])
    want = [p.detach().reshape(-1).cpu() for p in per]
    if not all(torch.isfinite(w).all() for w in want):
        return False, "its probe step produced non-finite values"
    # Relative to each tensor's largest value (its scale).
    err = max(((g - w).abs().max() / w.abs().max().clamp_min(1e-30)).item()
              for g, w in zip(got, want))
    if err > PROBE_TOLERANCE:
        return False, (f"one flat tensor and separate tensors differ by {err:.3g} (relative) "
                       f"after {_PROBE_STEPS} steps: it is not element-wise")
    apart = [p.detach().reshape(-1).cpu() for p in alone]
    err = max(((g - w).abs().max() / w.abs().max().clamp_min(1e-30)).item()
              for g, w in zip(apart, want))
    if err > PROBE_TOLERANCE:
        return False, (f"tensors in one param group and in groups of their own differ by "
                       f"{err:.3g} (relative) after {_PROBE_STEPS} steps: it couples the "
                       "tensors of a group")
    return True, ""


def classify(optimizer, elementwise):
    """('elementwise' | 'per_tensor', reason). elementwise: the user's
    declaration (True/False) or None (known types, else the probe)."""
    if elementwise is not None:
        return ("elementwise" if elementwise else "per_tensor"), "declared by the caller"
    kind = known_kind(optimizer)
    if kind is not None:
        return kind, f"{type(optimizer).__name__} is known to be {kind.replace('_', '-')}"
    group = optimizer.param_groups[0]
    device = next((p.device for p in group["params"]), torch.device("cpu"))
    ok, why = probe(optimizer, group, device)
    if ok:
        _logger.info("bagua: %s passed the element-wise probe: fused on flat buffers",
                     type(optimizer).__name__)
        return "elementwise", "passed the element-wise probe"
    return "per_tensor", why
