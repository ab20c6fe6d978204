"""fuse_optimizer: any torch.optim.Optimizer stepping on a few flat buffers
instead of many tensors, with per-tensor semantics kept.

The optimizer object stays the user's: its param_groups, its state (each
parameter's own, now views of the buffers), state_dict/load_state_dict, its
hooks and lr schedulers work as before. Its step() is replaced by the fused
step (also reachable as fuse_step(), the original Bagua API):

- parameters of each param group are split by dtype and device and laid
  into flat buffers (layout.FlatGroup), in runs of uniform state;
- element-wise optimizers step on the runs: through a native kernel where
  one exists (native.py), else with the optimizer's own update on the run
  tensors (one call for all runs, as torch's foreach path would batch);
- optimizers that are not element-wise (classify.py) are never flattened:
  bagua's Lamb runs per tensor in the native kernel, anything else steps
  unfused as before (one warning says why);
- AMP: GradScaler passes grad_scale/found_inf (the optimizer declares
  _step_supports_amp_scaling); an inf skips the step, grads are unscaled in
  the step.
"""
import collections
import contextlib
import logging
import warnings

import torch

from . import native, pipeline
from .classify import classify
from .layout import FlatGroup, Rebuild, Unfusable, check_own_storage, shared_storages

_logger = logging.getLogger("bagua")


class _ParamList(list):
    """A param group's list of parameters that notices changes (a parameter
    replaced, added or removed), so the step lays the group out again."""

    bagua_dirty = False

    def _touch(name):  # noqa: N805 - builds the mutating methods below
        def method(self, *args, **kwargs):
            self.bagua_dirty = True
            return getattr(list, name)(self, *args, **kwargs)
        method.__name__ = name
        return method

    for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend",
                  "insert", "pop", "remove", "clear", "sort", "reverse"):
        locals()[_name] = _touch(_name)
    del _name, _touch


def _unwrapped_step(cls):
    """The optimizer class's own step, without torch's hook wrapper (hooks
    run once, around the fused step)."""
    fn = cls.step
    while getattr(fn, "hooked", False) and hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


class _GroupPlan:
    def __init__(self, group):
        self.group = group
        self.params = group["params"]
        self.flats = []       # FlatGroup per (dtype, device)
        self.natives = {}     # id(FlatGroup) -> NativeGroup
        self.unfused = False  # stepped by the wrapped optimizer as it is

    def current(self, group):
        return (self.group is group and group["params"] is self.params and
                not getattr(self.params, "bagua_dirty", False))


class FusedState:
    """What fuse_optimizer attaches to the optimizer (optimizer._bagua_fused)."""

    def __init__(self, optimizer, do_flatten, check_flatten, elementwise):
        self.optimizer = optimizer
        self.do_flatten = do_flatten
        self.exact = bool(check_flatten)
        self.kind, self.reason = classify(optimizer, elementwise)
        self.spec = native.spec_for(optimizer)
        self.stats = collections.Counter(layouts=0, grads_relaid=0, params_relaid=0,
                                         fused_steps=0, skipped_steps=0, native_launches=0,
                                         generic_calls=0, resumed_after_relayout=0)
        self.plans = []
        self._stepped = set()
        self._step_fn = _unwrapped_step(type(optimizer))
        if self.kind == "per_tensor" and not (self.spec is not None and self.spec.per_tensor):
            warnings.warn(f"bagua fuse_optimizer: {type(optimizer).__name__} steps per tensor, "
                          f"unfused ({self.reason})", stacklevel=3)
        self.layout()

    # -- layout -------------------------------------------------------------------
    def layout(self):
        self.plans = [self._plan(g) for g in self.optimizer.param_groups]
        self.stats["layouts"] += 1
        # GradScaler hands grad_scale/found_inf to a step that handles them;
        # with nothing fused it unscales and skips as for any optimizer.
        self.optimizer._step_supports_amp_scaling = not all(p.unfused for p in self.plans)

    def _plan(self, group):
        if not isinstance(group["params"], _ParamList):
            group["params"] = _ParamList(group["params"])
        group["params"].bagua_dirty = False
        plan = _GroupPlan(group)
        native_ok = self.spec is not None
        if not self.do_flatten or (self.kind == "per_tensor" and not
                                   (native_ok and self.spec.per_tensor)):
            plan.unfused = True
            return plan
        parts = {}
        for p in group["params"]:
            if p.numel() > 0:  # stepping no element is nothing to do
                parts.setdefault((p.dtype, p.device), []).append(p)
        shared = shared_storages(self.optimizer.param_groups)
        try:
            for (dtype, device), params in parts.items():
                check_own_storage(params, shared)
                why = self.spec.supports(group, dtype, device) if native_ok else "no kernel"
                if self.kind == "per_tensor" and why is not None:
                    raise Unfusable(f"{type(self.optimizer).__name__} is not element-wise and "
                                    f"its kernel does not take this group ({why})")
                if why is None:
                    self.spec.drop_absent(group, params, self.optimizer.state)
                flat = FlatGroup(params, self.optimizer.state, self.exact, self.stats)
                plan.flats.append(flat)
                if why is None:
                    plan.natives[id(flat)] = native.NativeGroup(self.spec, flat)
        except Unfusable as e:
            warnings.warn(f"bagua fuse_optimizer: a param group of {len(group['params'])} "
                          f"parameters steps unfused: {e}", stacklevel=4)
            plan.flats, plan.natives, plan.unfused = [], {}, True
        return plan

    def _current_plans(self):
        groups = self.optimizer.param_groups
        if len(groups) != len(self.plans) or not all(
                p.current(g) for p, g in zip(self.plans, groups)):
            self.layout()
        return self.plans

    # -- the step -------------------------------------------------------------------
    def step(self, closure=None):
        opt = self.optimizer
        if all(plan.unfused for plan in self._current_plans()):
            return self._step_fn(opt, closure)  # nothing fused: the optimizer as it is
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        grad_scale = getattr(opt, "grad_scale", None)
        found_inf = getattr(opt, "found_inf", None)
        if found_inf is not None and float(found_inf.item()) != 0.0:
            self.stats["skipped_steps"] += 1
            return loss
        with torch.no_grad():
            self._stepped = set()  # parameters (ids) stepped before a rebuild (pipeline.py)
            for attempt in range(3):
                try:
                    work, piped = self._prepare_all()
                    self._run_pieces(piped, grad_scale)
                    break
                except _Retry:
                    if attempt == 2:
                        raise RuntimeError("bagua fuse_optimizer: the parameters kept changing "
                                           "while the step laid them out") from None
            self._run(work, grad_scale)
            self._stepped = set()
        self.stats["fused_steps"] += 1
        return loss

    def _prepare_all(self):
        """Checks and repairs every flat group before anything steps (a
        rebuilt layout restarts the preparation, never a half-done step),
        except the large ones checked piece by piece as they step
        (pipeline.py): (work, pieced)."""
        work, pieced = [], []
        for plan in self._current_plans():
            if plan.unfused:
                work.append((plan, None, None))
                continue
            for flat in plan.flats:
                ranges = pipeline.pieces(flat)
                if ranges:
                    pieced.append((plan, flat, ranges))
                    continue
                runs = self._prepare(plan, flat)
                if runs:
                    work.append((plan, flat, runs))
        return work, pieced

    def _run_pieces(self, pieced, grad_scale):
        """Large flat groups: each piece checked, then its kernel launched,
        so the GPU steps one piece while the host checks the next."""
        progress = []  # [flat, parameters stepped so far]
        for plan, flat, ranges in pieced:
            ng = plan.natives.get(id(flat))
            progress.append([flat, 0])
            flat.watch.begin_scan()  # helper threads read ahead of the pieces
            try:
                for begin, end in ranges:
                    runs = self._prepare(plan, flat, begin, end, progress)
                    for run in runs:
                        run.refresh_group(plan.group)
                    if runs and ng is None:
                        self._generic_step([(flat, run) for run in runs], grad_scale)
                    elif runs:
                        self._native_step(ng, plan, flat, runs, grad_scale)
                    progress[-1][1] = end
            finally:
                flat.watch.end_scan()

    def _run(self, work, grad_scale):
        generic, unfused = [], []
        for plan, flat, runs in work:
            if flat is None:
                unfused.append(plan.group)
                continue
            for run in runs:
                run.refresh_group(plan.group)
            ng = plan.natives.get(id(flat))
            if ng is None:
                generic.extend((flat, run) for run in runs)
                continue
            self._native_step(ng, plan, flat, runs, grad_scale)
        if generic:
            self._generic_step(generic, grad_scale)
        if unfused:
            self._unfused_step(unfused, grad_scale)
        for plan in self.plans:
            for flat in plan.flats:
                flat.merge_runs()

    def _native_step(self, ng, plan, flat, runs, grad_scale):
        self.stats["native_launches"] += ng.step(runs, plan.group, grad_scale)
        for run in runs:
            flat.after_step(run, self.optimizer.state)

    def _prepare(self, plan, flat, begin=0, end=None, progress=()):
        """Runs of `flat` among parameters [begin, end) to step, checked and
        repaired; on a rebuild the step starts over, and parameters already
        stepped (`progress`: pieces of earlier groups) sit it out."""
        try:
            missing = flat.check(self.optimizer.state, begin, end or 0)
        except Rebuild as e:
            _logger.info("bagua fuse_optimizer: laying out again (%s)", e)
            flat.watch.end_scan()  # no helper reads a parameter the new layout moves
            if any(upto for _, upto in progress):
                self.stats["resumed_after_relayout"] += 1
            for done, upto in progress:
                self._stepped.update(id(p) for p in done.params[:upto])
            self.layout()
            raise _Retry() from e
        end = len(flat.params) if end is None else end
        if self._stepped:
            missing = list(missing) + [i for i in range(begin, end)
                                       if id(flat.params[i]) in self._stepped]
        return flat.active_runs(missing, begin, end)

    def _generic_step(self, pairs, grad_scale):
        if grad_scale is not None:
            torch._foreach_div_([run.param.grad for _, run in pairs], grad_scale)
        state = collections.defaultdict(dict, {run.param: run.state for _, run in pairs})
        with _stepping_over(self.optimizer, [run.group for _, run in pairs], state):
            self._step_fn(self.optimizer)
        self.stats["generic_calls"] += 1
        for flat, run in pairs:
            flat.after_step(run, self.optimizer.state)

    def _unfused_step(self, groups, grad_scale):
        if grad_scale is not None:
            grads = [p.grad for g in groups for p in g["params"] if p.grad is not None]
            if grads:
                torch._foreach_div_(grads, grad_scale)
        with _stepping_over(self.optimizer, groups):
            self._step_fn(self.optimizer)


@contextlib.contextmanager
def _stepping_over(optimizer, groups, state=None):
    """The optimizer itself, with `groups` (and `state`) in place of its own
    for one step: attributes it keeps beside them (a step count) stay its
    own. A copy lost them (torch's __getstate__ keeps defaults, state and
    param_groups only) and kept any change to itself."""
    saved = optimizer.param_groups, optimizer.state
    optimizer.param_groups = groups
    if state is not None:
        optimizer.state = state
    try:
        yield optimizer
    finally:
        optimizer.param_groups, optimizer.state = saved


class _Retry(Exception):
    """The layout was rebuilt during a step: the step starts over."""


def fuse_optimizer(optimizer, do_flatten=True, check_flatten=True, elementwise=None):
    """Makes `optimizer` step on flat buffers; returns it (patched in place).

    do_flatten: lay parameters, gradients and state into flat buffers (False:
        nothing is moved and the wrapped optimizer steps as it is).
    check_flatten: check every parameter and gradient at every step (True),
        or only the use counts of the buffers' storages (False: O(1) per
        step; see layout.py for what that cannot see).
    elementwise: True/False declares whether the optimizer is element-wise;
        None: torch's known optimizers by type, others by a one-time probe.

    Adds optimizer.fuse_step(closure=None) (the original Bagua API; the same
    as the now fused optimizer.step) and optimizer.bagua_fused_stats().
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"bagua fuse_optimizer: expected a torch.optim.Optimizer, got "
                        f"{type(optimizer).__name__}")
    if getattr(optimizer, "_bagua_fused", None) is not None:
        return optimizer
    for name, value in (("do_flatten", do_flatten), ("check_flatten", check_flatten)):
        if not isinstance(value, bool):
            raise TypeError(f"bagua fuse_optimizer: {name}={value!r}; expected True or False")
    if elementwise not in (None, True, False):
        raise TypeError(f"bagua fuse_optimizer: elementwise={elementwise!r}; expected None, "
                        "True or False")
    fused = FusedState(optimizer, do_flatten, check_flatten, elementwise)
    optimizer._bagua_fused = fused
    cls = type(optimizer)

    def step(self, closure=None):
        self._opt_called = True  # what an lr scheduler's step wrapper records
        return self._bagua_fused.step(closure)
    step._wrapped_by_lr_sched = True  # schedulers need not wrap it: it records the call itself
    hooked = torch.optim.Optimizer.profile_hook_step(step)
    hooked._wrapped_by_lr_sched = True
    optimizer.step = hooked.__get__(optimizer, cls)
    optimizer.fuse_step = optimizer.step

    def zero_grad(self, set_to_none=True):
        return _zero_grad(self, set_to_none)
    optimizer.zero_grad = zero_grad.__get__(optimizer, cls)

    def load_state_dict(self, state_dict):
        cls.load_state_dict(self, state_dict)
        self._bagua_fused.layout()
    optimizer.load_state_dict = load_state_dict.__get__(optimizer, cls)
    optimizer.bagua_fused_stats = lambda: dict(fused.stats)
    return optimizer


def _zero_grad(optimizer, set_to_none):
    """torch's zero_grad; with set_to_none=False a flat group's gradients
    are zeroed in one operation on the buffer."""
    fused = optimizer._bagua_fused
    if set_to_none:
        return type(optimizer).zero_grad(optimizer, set_to_none=True)
    try:
        rest = _zero_flat_grads(optimizer, fused)
    except Rebuild as e:  # the model changed (dtype, device, shape): as step() does
        _logger.info("bagua fuse_optimizer: laying out again (%s)", e)
        fused.layout()
        rest = _zero_flat_grads(optimizer, fused)
    if rest:
        with _stepping_over(optimizer, rest):
            type(optimizer).zero_grad(optimizer, set_to_none=False)


def _zero_flat_grads(optimizer, fused):
    """Zeroes the gradient buffers of the flat groups; returns the groups
    left unfused, for torch's zero_grad. Raises Rebuild when the model
    changed since the layout."""
    rest = []
    with torch.no_grad():
        for plan in fused._current_plans():
            if plan.unfused:
                rest.append(plan.group)
                continue
            for flat in plan.flats:
                flat.check(optimizer.state)  # gradients that are not views go back in
                flat.G.zero_()
    return rest


def is_fused(optimizer):
    return getattr(optimizer, "_bagua_fused", None) is not None


def is_fused_optimizer(optimizer):
    """The original's name of is_fused."""
    return is_fused(optimizer)


def fuse_step(optimizer, closure=None):
    """The original's fused step: optimizer.step(closure) of an optimizer
    that fuse_optimizer made fused."""
    if not is_fused(optimizer):
        raise ValueError("bagua fuse_step: the optimizer is not fused; call "
                         "fuse_optimizer(optimizer) first")
    return optimizer.step(closure)
