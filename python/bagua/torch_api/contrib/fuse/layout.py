"""FlatGroup: the parameters of one param group that share a dtype and a
device, laid end to end into one parameter buffer, one gradient buffer and
one buffer per tensor state (exp_avg, momentum_buffer...). Each parameter's
.data, .grad and state become views of those buffers, so the user's model
and optimizer.state keep working; scalar state (a 0-dim step tensor) lives
in a buffer of one element per parameter, viewed the same way.

Every step first checks that this still holds (check(), relay()):
- a gradient that is not the view (zero_grad(set_to_none=True) then
  backward, or an assignment) is copied into the buffer and the view put
  back; a None gradient makes that parameter skip the step, as in torch;
- a parameter whose .data was replaced (same shape, dtype and device) is
  copied in and re-pointed; anything else rebuilds the layout.
With exact checks (check_flatten=True) every parameter is looked at every
step, in one C pass (bagua._C.FlatWatch: gradients by identity, data
pointers); nothing is done in Python unless something changed. Without
(check_flatten=False) a step looks at the use counts of the two storages
only and runs that pass when one changed; a replacement that coincides with
new long-lived views of the same storage within one step goes unseen there.

Parameter buffers are registered by their storage (a weak reference to it,
so the registry never keeps memory alive and a storage address is never
reused while registered): parameters that view one were laid out by a fused
optimizer, this one or an earlier one over the same model (dead or
replaced), and are laid out again; any other shared storage is refused.
"""
import torch
from torch.multiprocessing.reductions import StorageWeakRef

from .runs import Run, is_param_shaped, scalar_key

def _run_at(runs, i):
    """Index of the run holding parameter i (runs sorted, tiling the group)."""
    lo, hi = 0, len(runs)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if runs[mid].start <= i:
            lo = mid
        else:
            hi = mid
    return lo


# Parameter buffers laid out by fused optimizers, by the address of their
# StorageImpl: weak references, which keep the address from being reused
# while registered; dead ones are dropped as new ones come.
_BUFFERS = {}


def _register_buffer(t):
    for key in [k for k, ref in _BUFFERS.items() if ref.expired()]:
        del _BUFFERS[key]
    ref = StorageWeakRef(t.untyped_storage())
    _BUFFERS[ref.cdata] = ref


def is_fused_buffer(storage):
    """Whether `storage` is a parameter buffer of a fused optimizer (alive:
    something views it; its optimizer may be gone)."""
    ref = _BUFFERS.get(storage._cdata)
    return ref is not None and not ref.expired()


class Rebuild(Exception):
    """The layout no longer fits the parameters (new shape, dtype, device)."""


class Unfusable(Exception):
    """State the flat layout cannot hold (the reason is the message)."""


def _use_count(t):
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata)


# torch's own accessors, which FlatWatch calls directly.
_GRAD_DESCR = torch._C.TensorBase.__dict__["grad"]
_DATA_PTR = torch._C.TensorBase.__dict__["data_ptr"]
_LAYOUT = []  # [find_tensor_layout's answer], once per process


def tensor_layout():
    """Where FlatWatch finds the fields it reads in torch's objects (found
    once on probe tensors whose values are known), or None: it then uses
    torch's accessors only (python/src/flat_watch.h)."""
    if not _LAYOUT:
        from .... import _C

        with torch.no_grad():
            base, gbase = torch.zeros(64), torch.zeros(64)
            params = []
            for i in range(1, 9):
                p = torch.nn.Parameter(torch.zeros(1))
                p.data = base[i:i + 1]
                p.grad = gbase[i:i + 1]
                params.append(p)
            plain = [torch.zeros(1) for _ in range(4)]
        try:
            found = _C.find_tensor_layout(
                params, [p._cdata for p in params],
                [p.untyped_storage()._cdata for p in params],
                [p.storage_offset() for p in params], [p.grad._cdata for p in params],
                plain, [t._cdata for t in plain])
        except (AttributeError, RuntimeError, ValueError):
            found = None
        _LAYOUT.append(found)
    return _LAYOUT[0]


def dense_strides(t):
    """t's strides when its elements fill its storage span without gaps or
    overlap (contiguous, channels_last...), else the contiguous ones."""
    dims = sorted(range(t.dim()), key=lambda d: (t.stride(d), t.shape[d]))
    expect = 1
    for d in dims:
        if t.shape[d] != 1 and t.stride(d) != expect:
            return torch.empty(t.shape, device="meta").stride()
        expect *= t.shape[d]
    return t.stride()


def shared_storages(groups):
    """Addresses of the storages that more than one parameter of `groups`
    lives in (a parameter made from another's `.data.t()`), fused buffers
    aside."""
    seen, shared = set(), set()
    for group in groups:
        for p in group["params"]:
            storage = p.untyped_storage()
            if p.numel() == 0 or is_fused_buffer(storage):
                continue
            (shared if storage.data_ptr() in seen else seen).add(storage.data_ptr())
    return shared


def check_own_storage(params, shared=frozenset()):
    """Refuses parameters that share their storage with other tensors (views
    of a larger tensor, as FSDP's, or another parameter's storage: `shared`,
    from shared_storages): moving them would break the aliasing. Views of a
    fused optimizer's own parameter buffer are fine."""
    for i, p in enumerate(params):
        storage = p.untyped_storage()
        if is_fused_buffer(storage):
            continue
        if storage.nbytes() != p.numel() * p.element_size():
            raise Unfusable(f"parameter {i} (shape {tuple(p.shape)}) is a view into a storage "
                            f"of {storage.nbytes()} bytes shared with other tensors; moving it "
                            "would break that aliasing")
        if storage.data_ptr() in shared:
            raise Unfusable(f"parameter {i} (shape {tuple(p.shape)}) shares its storage with "
                            "another parameter of the optimizer; moving one would break that "
                            "aliasing")


class FlatGroup:
    def __init__(self, params, state, exact, stats):
        from .... import _C

        self.params = list(params)
        self.exact = exact
        self.stats = stats
        p0 = self.params[0]
        self.dtype, self.device = p0.dtype, p0.device
        self.shapes = [p.shape for p in self.params]
        self.strides = [dense_strides(p) for p in self.params]
        numels = [p.numel() for p in self.params]
        self.bounds = [0]
        for n in numels:
            self.bounds.append(self.bounds[-1] + n)
        self.total = self.bounds[-1]
        with torch.no_grad():
            self.P = torch.empty(self.total, dtype=self.dtype, device=self.device)
            self.G = torch.zeros_like(self.P)
            self.param_views = self._views(self.P)
            torch._foreach_copy_(self.param_views, [p.detach() for p in self.params])
        _register_buffer(self.P)
        for p, v in zip(self.params, self.param_views):
            p.data = v
        # Exact checks compare each .grad with its view by identity; the
        # use-count checks must not hold the views (a dropped gradient would
        # not lower the count), so they compare data pointers.
        self.grad_views = self._views(self.G) if exact else None
        self.grad_ptrs = [self.G.data_ptr() + a * self.G.element_size() for a in self.bounds[:-1]]
        who = [i for i, p in enumerate(self.params) if p.grad is not None]
        for i, v in zip(who, self._repoint_grads(who, [self.params[i].grad for i in who])):
            self.params[i].grad = v
        self.watch = _C.FlatWatch(
            self.params, self.grad_views, self.grad_ptrs,
            [v.data_ptr() for v in self.param_views], _GRAD_DESCR, _DATA_PTR,
            tensor_layout() if exact else None, self.P.untyped_storage()._cdata, self.bounds[:-1])
        self.tensor_bufs = {}
        self.scalar_bufs = {}
        self.runs = self._adopt(state)
        self._baseline(all(p.grad is not None for p in self.params))

    # -- layout -----------------------------------------------------------------
    def _views(self, flat):
        """Each parameter's region of `flat`, with the parameter's shape and
        (dense) strides: an element-wise update sees the same order everywhere."""
        return [v.as_strided(s, st) for v, s, st in zip(flat.split(
            [b - a for a, b in zip(self.bounds, self.bounds[1:])]), self.shapes, self.strides)]

    def view_of(self, buf, i):
        return buf[self.bounds[i]:self.bounds[i + 1]].as_strided(self.shapes[i], self.strides[i])

    def _repoint_grads(self, who, grads):
        """Gradients `grads` of parameters `who` (tensors, not the views):
        copied into the gradient buffer; returns the views to put back."""
        if not who:
            return []
        views = ([self.grad_views[i] for i in who] if self.exact
                 else [self.view_of(self.G, i) for i in who])
        try:
            with torch.no_grad():
                torch._foreach_copy_(views, grads)
        except RuntimeError:
            for i, g in zip(who, grads):
                if g.is_sparse:
                    raise ValueError(
                        f"bagua fuse_optimizer: parameter {i} of a fused group (shape "
                        f"{tuple(self.shapes[i])}) has a sparse gradient; flat buffers hold "
                        "dense gradients only (use the unfused optimizer for sparse "
                        "gradients)") from None
            raise
        return views

    def _adopt(self, state):
        """Lays the optimizer's existing state of these parameters into buffers
        (views replace the values in `state`) and cuts the runs."""
        per = [state[p] if p in state else {} for p in self.params]
        kinds = {}
        for i, st in enumerate(per):
            for k, v in st.items():
                kind = self._kind(i, k, v)
                seen = kinds.setdefault(k, kind)
                if seen != kind:
                    raise Unfusable(f"state {k!r} is {seen} for some parameters and {kind} for "
                                    "others")
        with torch.no_grad():
            for k, kind in kinds.items():
                holders = [i for i, st in enumerate(per) if k in st]
                if kind[0] == "tensor":
                    buf = torch.zeros(self.total, dtype=kind[1], device=self.device)
                    views = [self.view_of(buf, i) for i in holders]
                    torch._foreach_copy_(views, [per[i][k] for i in holders])
                    for i, v in zip(holders, views):
                        per[i][k] = v
                    self.tensor_bufs[k] = buf
                elif kind[0] == "scalar":
                    first = per[holders[0]][k]
                    buf = torch.zeros(len(self.params), dtype=first.dtype, device=first.device)
                    buf[holders] = torch.stack([per[i][k] for i in holders])
                    for i in holders:
                        per[i][k] = buf[i]
                    self.scalar_bufs[k] = buf
        runs, start = [], 0
        sigs = [tuple(sorted(((k, "t") if kinds[k][0] == "tensor" else (k, scalar_key(v)))
                             for k, v in st.items())) for st in per]
        for i in range(1, len(per) + 1):
            if i == len(per) or sigs[i] != sigs[start]:
                runs.append(Run(self, start, i, self._run_state(per[start], start, i)))
                start = i
        return runs

    def _kind(self, i, k, v):
        if isinstance(v, torch.Tensor):
            if v.is_sparse:
                raise Unfusable(f"state {k!r} is a sparse tensor")
            if v.shape == self.shapes[i] and v.device == self.device:
                return ("tensor", v.dtype)
            if v.dim() == 0:
                return ("scalar", v.dtype, v.device)
            raise Unfusable(f"state {k!r} has shape {tuple(v.shape)} for a parameter of shape "
                            f"{tuple(self.shapes[i])} (not element-wise)")
        if v is None or isinstance(v, (bool, int, float)):
            return ("value",)
        raise Unfusable(f"state {k!r} holds a {type(v).__name__}")

    def _run_state(self, st, a, b):
        lo, hi = self.bounds[a], self.bounds[b]
        out = {}
        for k, v in st.items():
            if k in self.tensor_bufs:
                out[k] = self.tensor_bufs[k][lo:hi]
            elif isinstance(v, torch.Tensor):
                out[k] = v.clone()
            else:
                out[k] = v
        return out

    def _baseline(self, all_viewed):
        # A None gradient can become a new tensor (backward) without changing
        # a count: the counts speak for the gradients only when all are views.
        self.all_viewed = all_viewed
        if not self.exact:
            self.counts = (_use_count(self.P), _use_count(self.G))

    # -- every step ---------------------------------------------------------------
    def check(self, state, begin=0, end=0):
        """Repairs what changed since the last step (parameters [begin, end),
        end 0: all; ranges need exact checks); returns the indices of
        parameters without a gradient (they skip this step)."""
        if (not self.exact and self.all_viewed and
                (_use_count(self.P), _use_count(self.G)) == self.counts):
            return ()
        missing, odd, moved, grads = self.watch.check(begin, end)
        if moved:
            self._repoint_data(state, moved)
        if odd:
            self.watch.set_grads(odd, self._repoint_grads(odd, grads))
            self.stats["grads_relaid"] += len(odd)
        if not self.exact:
            self._baseline(not missing)
        return missing

    def _repoint_data(self, state, moved):
        for i in moved:
            p = self.params[i]
            if p.shape != self.shapes[i] or p.dtype != self.dtype or p.device != self.device:
                raise Rebuild(f"parameter {i} is now {p.dtype} {tuple(p.shape)} on {p.device}")
            with torch.no_grad():
                self.param_views[i].copy_(p.data)
            p.data = self.param_views[i]
            self.stats["params_relaid"] += 1

    def active_runs(self, missing, begin=0, end=None):
        """Runs to step among parameters [begin, end) (runs are cut there):
        runs holding a parameter without a gradient are cut around it, and
        the pieces without gradients sit this step out."""
        end = len(self.params) if end is None else end
        cuts = {c for c in (begin, end) if 0 < c < len(self.params)}
        for i in missing:
            cuts.update((i, i + 1))
        # The runs overlapping [begin, end) (runs are sorted and tile the group).
        first = _run_at(self.runs, begin)
        last = first
        while last < len(self.runs) and self.runs[last].start < end:
            last += 1
        mine = []
        for run in self.runs[first:last]:
            for c in sorted(x for x in cuts if run.start < x < run.stop):
                head, run = run.split(self, c)
                mine.append(head)
            mine.append(run)
        self.runs[first:last] = mine
        skip = set(missing)
        return [r for r in mine if begin <= r.start and r.stop <= end and r.start not in skip]

    def after_step(self, run, state):
        """Writes the run's state back into the buffers and the parameters'
        own state (new keys on its first step get buffers and views)."""
        for k, v in list(run.state.items()):
            if is_param_shaped(v, run.numel):
                self._tensor_back(run, state, k, v)
            elif isinstance(v, torch.Tensor):
                self._scalar_back(run, state, k, v)
            elif k not in run.values or run.values[k] is not v:
                run.values[k] = v
                for p in self.params[run.start:run.stop]:
                    state[p][k] = v

    def _tensor_back(self, run, state, k, v):
        buf = self.tensor_bufs.get(k)
        if buf is None:
            if run.lo == 0 and run.hi == self.total and v.is_contiguous():
                buf = v.detach().view(-1)  # the optimizer's own flat tensor becomes the buffer
            else:
                buf = torch.zeros(self.total, dtype=v.dtype, device=v.device)
            self.tensor_bufs[k] = buf
        view = buf[run.lo:run.hi]
        if v is not view and v.data_ptr() != view.data_ptr():
            with torch.no_grad():
                view.copy_(v.view(-1))  # the optimizer replaced it: back into the buffer
        if v is not view:
            run.state[k] = view
        if k not in run.synced:
            for i in range(run.start, run.stop):
                state[self.params[i]][k] = self.view_of(buf, i)
            run.synced.add(k)

    def _scalar_back(self, run, state, k, v):
        buf = self.scalar_bufs.get(k)
        if buf is None or buf.dtype != v.dtype or buf.device != v.device:
            buf = torch.zeros(len(self.params), dtype=v.dtype, device=v.device)
            self.scalar_bufs[k] = buf
            for r in self.runs:
                r.synced.discard(k)
        with torch.no_grad():
            buf[run.start:run.stop].fill_(v.detach())
        if k not in run.synced:
            for i in range(run.start, run.stop):
                state[self.params[i]][k] = buf[i]
            run.synced.add(k)

    def merge_runs(self):
        """Adjacent runs whose state became equal again step as one."""
        if len(self.runs) < 2:
            return
        merged = [self.runs[0]]
        for run in self.runs[1:]:
            last = merged[-1]
            if last.signature() == run.signature() and last.host_step == run.host_step:
                keep = Run(self, last.start, run.stop, self._run_state(last.state, last.start,
                                                                      run.stop))
                keep.host_step = last.host_step
                keep.synced = last.synced & run.synced
                merged[-1] = keep
            else:
                merged.append(run)
        self.runs = merged
