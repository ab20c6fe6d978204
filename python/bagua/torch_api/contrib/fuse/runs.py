"""A run: consecutive parameters of one flat group whose optimizer state is
uniform (same keys, equal scalar values such as the step count), stepped as
one flat tensor. Its parameter is a view of the group's parameter buffer,
its gradient a view of the gradient buffer, and its state holds views of
the state buffers (tensor state) or its own values (scalar state: 0-dim
tensors and Python numbers), written back to every parameter's own state
after each step (FlatGroup.after_step).

The wrapped optimizer's update runs on run parameters: with every tensor of
the state a flat view, an element-wise update is the per-tensor one.
"""
import torch


def is_param_shaped(value, numel):
    return isinstance(value, torch.Tensor) and value.dim() >= 1 and value.numel() == numel


def scalar_key(value):
    """What makes scalar state equal between parameters (compared on the host)."""
    if isinstance(value, torch.Tensor):
        return ("tensor", value.dtype, value.device.type, value.item())
    return ("value", value)


class Run:
    __slots__ = ("start", "stop", "lo", "hi", "param", "state", "group", "values", "host_step",
                 "synced")

    def __init__(self, flat, start, stop, state):
        """Parameters [start, stop) of `flat`; `state` the run's own state
        dict ({} when the optimizer has not initialised it yet)."""
        self.start, self.stop = start, stop
        self.lo, self.hi = flat.bounds[start], flat.bounds[stop]
        self.param = torch.nn.Parameter(flat.P[self.lo:self.hi], requires_grad=True)
        self.param.grad = flat.G[self.lo:self.hi]
        self.state = state
        self.group = {}
        # Python-number state last written to the parameters' own state.
        self.values = {k: v for k, v in state.items() if not isinstance(v, torch.Tensor)}
        self.host_step = None  # the native path's step count, kept on the host
        # Tensor keys whose buffers the parameters' own state already views.
        self.synced = {k for k, v in state.items() if isinstance(v, torch.Tensor)}

    @property
    def numel(self):
        return self.hi - self.lo

    def refresh_group(self, outer_group):
        """The outer param group's hyperparameters (lr schedules change them)."""
        for k, v in outer_group.items():
            if k != "params":
                self.group[k] = v
        self.group["params"] = [self.param]

    def signature(self):
        """Equal for runs that may step as one: same keys, equal scalars."""
        sig = []
        for k in sorted(self.state, key=str):
            v = self.state[k]
            sig.append((k, "tensor") if is_param_shaped(v, self.numel) else (k, scalar_key(v)))
        return tuple(sig)

    def split(self, flat, cut):
        """Two runs [start, cut) and [cut, stop) with copies of this run's
        scalar state and views of its tensor state."""
        out = []
        for a, b in ((self.start, cut), (cut, self.stop)):
            lo, hi = flat.bounds[a], flat.bounds[b]
            state = {}
            for k, v in self.state.items():
                if is_param_shaped(v, self.numel):
                    state[k] = flat.tensor_bufs[k][lo:hi]
                elif isinstance(v, torch.Tensor):
                    state[k] = v.clone()
                else:
                    state[k] = v
            run = Run(flat, a, b, state)
            run.host_step = self.host_step
            run.synced = set(self.synced)
            out.append(run)
        return out
