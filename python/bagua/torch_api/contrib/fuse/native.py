"""The native kernels (kernels/optim/, bagua._C.OptimList) for the
optimizers that have one: torch.optim.SGD, Adam, AdamW, Adagrad and bagua's
Lamb. Element-wise optimizers get one list entry per run (a flat tensor);
Lamb gets one entry per parameter (views into the same flat buffers), so
each tensor keeps its own trust ratio. A list is uploaded once and reused
until the runs or the buffers change.

State is kept in torch's format (the keys, dtypes and devices the wrapped
optimizer would create), so state_dict() moves between the two; the step
count is also kept on the host, so the kernels get it as an argument.
"""
import torch

from .lamb import Lamb

_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}

# Tuning of the CUDA lists (kernels/optim/optim_cuda.h), read when a list is
# built: elements per thread block, LAMB's layout (LambLayout: batches > 1
# run one persistent kernel whose second pass finds the first one's data in
# L2; the lookahead and resident blocks per SM of that kernel, 0: auto),
# elements per vector access (0: 4 for float32, 8 for 16-bit parameters).
# bench/gpu/fused_optimizer_bench.py sweeps them.
CHUNK_ELEMS = 8192
LAMB_CHUNK_ELEMS = 8192
LAMB_BATCH_ELEMS = 0  # one batch, three launches (the persistent kernel lost on an H200)
LAMB_LOOKAHEAD = 0
LAMB_BLOCKS_PER_SM = 0
PACK_ELEMS = 0


def _f(x):
    return float(x.item()) if isinstance(x, torch.Tensor) else float(x)


class _Spec:
    keys = ()             # tensor state, in kernel slot order
    per_tensor = False    # one list entry per parameter (Lamb)
    has_step = True

    def supports(self, group, dtype, device):
        """None when the kernel does what the wrapped optimizer would, else why not."""
        if device.type not in ("cpu", "cuda"):
            return f"parameters on {device}"
        if dtype not in _DTYPES:
            return f"parameters of dtype {dtype}"
        if group.get("differentiable"):
            return "differentiable=True"
        return None

    def tensor_keys(self, group):
        return self.keys

    def drop_absent(self, group, params, state):
        """Tensor state the optimizer holds as None (torch's SGD treats a None
        momentum_buffer as "first step") is dropped: the kernel creates it
        on the first step, as the optimizer would."""
        keys = self.tensor_keys(group)
        for p in params:
            st = state.get(p)
            for k in keys:
                if st is not None and k in st and st[k] is None:
                    del st[k]

    def init_value(self, group, key):
        return 0.0

    def step_device(self, group, device):
        return device if group.get("fused") or group.get("capturable") else torch.device("cpu")


class _Sgd(_Spec):
    has_step = False

    def tensor_keys(self, group):
        return ("momentum_buffer",) if group["momentum"] != 0 else ()

    def run(self, olist, group, step, first, amp):
        olist.sgd(_f(group["lr"]), float(group["momentum"]), float(group["dampening"]),
                  float(group["weight_decay"]), bool(group["nesterov"]),
                  bool(group.get("maximize", False)), first, **amp)


class _Adam(_Spec):
    def __init__(self, decoupled):
        self.decoupled = decoupled

    def supports(self, group, dtype, device):
        if group.get("capturable"):
            return "capturable=True"
        return super().supports(group, dtype, device)

    def tensor_keys(self, group):
        return ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())

    def run(self, olist, group, step, first, amp):
        b1, b2 = group["betas"]
        decoupled = self.decoupled or bool(group.get("decoupled_weight_decay", False))
        olist.adam(_f(group["lr"]), _f(b1), _f(b2), float(group["eps"]),
                   float(group["weight_decay"]), step, decoupled, bool(group["amsgrad"]),
                   bool(group.get("maximize", False)), **amp)


class _Adagrad(_Spec):
    keys = ("sum",)

    def init_value(self, group, key):
        return float(group["initial_accumulator_value"])

    def step_device(self, group, device):
        return device if group.get("fused") else torch.device("cpu")

    def run(self, olist, group, step, first, amp):
        olist.adagrad(_f(group["lr"]), float(group["lr_decay"]), float(group["weight_decay"]),
                      float(group["eps"]), step, bool(group.get("maximize", False)), **amp)


class _Lamb(_Spec):
    keys = ("exp_avg", "exp_avg_sq")
    per_tensor = True

    def step_device(self, group, device):
        return torch.device("cpu")

    def run(self, olist, group, step, first, amp):
        b1, b2 = group["betas"]
        olist.lamb(_f(group["lr"]), float(b1), float(b2), float(group["eps"]),
                   float(group["weight_decay"]), step, float(group["max_trust"]),
                   bool(group["bias_correction"]), **amp)


SPECS = {torch.optim.SGD: _Sgd(), torch.optim.Adam: _Adam(False), torch.optim.AdamW: _Adam(True),
         torch.optim.Adagrad: _Adagrad(), Lamb: _Lamb()}


def spec_for(optimizer):
    return SPECS.get(type(optimizer))


class NativeGroup:
    """Steps the runs of one FlatGroup with a native kernel."""

    def __init__(self, spec, flat):
        from .... import _C

        self._C = _C
        self.spec = spec
        self.flat = flat
        self.lists = {}  # identity of the runs and buffers -> OptimList (a few kept)

    def _init_run(self, run, group):
        """State the wrapped optimizer would create on its first step."""
        flat = self.flat
        for k in self.spec.tensor_keys(group):
            if k not in run.state:
                buf = flat.tensor_bufs.get(k)
                if buf is None:
                    buf = torch.zeros(flat.total, dtype=flat.dtype, device=flat.device)
                    flat.tensor_bufs[k] = buf
                view = buf[run.lo:run.hi]
                view.fill_(self.spec.init_value(group, k))
                run.state[k] = view
        if self.spec.has_step and "step" not in run.state:
            run.state["step"] = torch.tensor(0.0, dtype=torch.float32,
                                             device=self.spec.step_device(group, flat.device))
        if self.spec.has_step and run.host_step is None:
            run.host_step = _f(run.state["step"])

    def _list(self, runs, group):
        flat = self.flat
        keys = self.spec.tensor_keys(group)
        bufs = [flat.tensor_bufs[k] for k in keys]
        ident = (tuple((r.lo, r.hi) for r in runs), flat.P.data_ptr(), flat.G.data_ptr(),
                 tuple(b.data_ptr() for b in bufs), tuple(b.dtype for b in bufs))
        olist = self.lists.get(ident)
        if olist is not None:
            return olist
        if len({b.dtype for b in bufs}) > 1:
            raise ValueError(f"bagua fuse_optimizer: state {keys} of mixed dtypes "
                             f"{[b.dtype for b in bufs]}")
        state_dtype = bufs[0].dtype if bufs else flat.dtype
        if state_dtype not in (torch.float32, flat.dtype):
            raise ValueError(f"bagua fuse_optimizer: state of dtype {state_dtype} for "
                             f"{flat.dtype} parameters; the kernels take float32 or "
                             f"{flat.dtype} state")
        es, ss = flat.P.element_size(), (bufs[0].element_size() if bufs else 0)
        if self.spec.per_tensor:
            spans = [(flat.bounds[i], flat.bounds[i + 1])
                     for r in runs for i in range(r.start, r.stop)]
        else:
            spans = [(r.lo, r.hi) for r in runs]
        entries = []
        for lo, hi in spans:
            slots = [b.data_ptr() + lo * ss for b in bufs] + [0] * (3 - len(bufs))
            entries.append((hi - lo, flat.P.data_ptr() + lo * es, flat.G.data_ptr() + lo * es,
                            *slots, 0))
        device = -1
        if flat.device.type == "cuda":
            device = flat.device.index if flat.device.index is not None else \
                torch.cuda.current_device()
        if len(self.lists) >= 64:  # a few per piece of a pieced group (pipeline.py)
            self.lists.clear()
        lamb = dict(chunk_elems=LAMB_CHUNK_ELEMS, lamb_batch_elems=LAMB_BATCH_ELEMS,
                    lamb_lookahead=LAMB_LOOKAHEAD, lamb_blocks_per_sm=LAMB_BLOCKS_PER_SM)
        olist = self._C.OptimList(device, entries, _DTYPES[flat.dtype], _DTYPES[state_dtype],
                                  pack_elems=PACK_ELEMS,
                                  **(lamb if self.spec.per_tensor else
                                     dict(chunk_elems=CHUNK_ELEMS)))
        self.lists[ident] = olist
        return olist

    def step(self, runs, group, grad_scale):
        """Launches the kernel over `runs`, one launch (Lamb: three, or one
        persistent kernel with batches) per set of runs at the same step
        count; returns the number of kernel calls."""
        keys = self.spec.tensor_keys(group)
        buckets = {}
        for run in runs:
            first = bool(keys) and not any(k in run.state for k in keys)
            self._init_run(run, group)
            buckets.setdefault((first, run.host_step), []).append(run)
        amp = dict(grad_scale=grad_scale.data_ptr() if grad_scale is not None else 0)
        if self.flat.device.type == "cuda":
            amp["stream"] = torch.cuda.current_stream(self.flat.device).cuda_stream
        for (first, host_step), bucket in buckets.items():
            step = host_step + 1 if self.spec.has_step else 0.0
            self.spec.run(self._list(bucket, group), group, step, first, amp)
            if self.spec.has_step:
                for run in bucket:
                    run.host_step = step
                    run.state["step"].fill_(step)
        return len(buckets)
