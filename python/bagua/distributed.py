"""BaguaDistributedDataParallel: a model wrapper that averages gradients with
one of Bagua's algorithms through libbagua.

How it works:
- At wrap time parameters and buffers are broadcast from rank 0, and every
  parameter that requires a gradient is registered with a C++ Reducer in
  reverse order (the order backward usually produces gradients). Every rank
  must wrap the same model: a mismatch is reported before any collective.
- A post-accumulate-grad hook per parameter marks its gradient ready; the
  Reducer launches each bucket once all its gradients are ready, in order,
  overlapping the rest of the backward pass. At the end of backward the host
  waits once for all buckets; the averaged gradients are then in `.grad`.
- Buffers (BatchNorm statistics) are broadcast from rank 0 before each
  forward (the original never synced them).
- A parameter that gets no gradient in a step: with find_unused_parameters
  its gradient counts as zero; without it, backward raises an error naming it.
- CUDA tensors use NCCL (the group's own stream waits for the autograd
  stream, never the host); CPU tensors use Gloo.
"""
import itertools
import os
from contextlib import contextmanager

import torch
import torch.distributed as dist

from . import _C
from .env import check_algorithm

_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
_instances = itertools.count()


def _store():
    try:
        return dist.distributed_c10d._get_default_store()
    except Exception as error:  # pragma: no cover - depends on torch internals
        raise RuntimeError(f"bagua: cannot reach torch.distributed's store: {error}") from error


class BaguaDistributedDataParallel(torch.nn.Module):
    """Wraps `module`; averages its gradients across ranks with `algorithm`.

    Args:
        module: the model (all parameters on one device, CPU or one GPU).
        algorithm: "gradient_allreduce" (default) or "bytegrad".
        bucket_mb: bucket size in MiB (Bagua's default 10).
        find_unused_parameters: treat parameters without a gradient as zero.
        broadcast_buffers: sync buffers from rank 0 before every forward.
        timeout_s: how long a step may wait for its collectives.
        **algorithm_options: average=True/False; bytegrad: error_feedback.
    """

    def __init__(self, module, algorithm="gradient_allreduce", *, bucket_mb=10,
                 find_unused_parameters=False, broadcast_buffers=True, timeout_s=300.0,
                 **algorithm_options):
        super().__init__()
        check_algorithm(algorithm)
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError(
                "bagua: torch.distributed is not initialised; start with torchrun (or Lightning) "
                "and call torch.distributed.init_process_group first"
            )
        self.module = module
        self.algorithm = algorithm
        self.find_unused_parameters = find_unused_parameters
        self.broadcast_buffers = broadcast_buffers
        self.require_backward_grad_sync = True
        rank, size = dist.get_rank(), dist.get_world_size()
        env_size = os.environ.get("WORLD_SIZE")
        if env_size is not None and int(env_size) != size:
            raise ValueError(
                f"bagua: WORLD_SIZE={env_size} in the environment but torch.distributed has "
                f"{size} ranks"
            )
        self._params = [p for p in reversed(list(module.parameters())) if p.requires_grad]
        names = {id(p): n for n, p in module.named_parameters()}
        devices = {p.device for p in module.parameters()} | {b.device for b in module.buffers()}
        if len(devices) > 1:
            raise ValueError(f"bagua: the module spans several devices {sorted(map(str, devices))}")
        device = next(iter(devices), torch.device("cpu"))
        for p in self._params:
            if p.dtype not in _DTYPES:
                raise ValueError(
                    f"bagua: parameter {names.get(id(p), '?')} has dtype {p.dtype}; supported: "
                    "float32, float16, bfloat16"
                )
        prefix = f"bagua/ddp{next(_instances)}"
        self._store = _C.CallbackStore(_store())
        if device.type == "cuda":
            self._group = _C.ProcessGroup.nccl(self._store, rank, size, device.index or 0,
                                               prefix=prefix + "/nccl", timeout_s=timeout_s)
        else:
            self._group = _C.ProcessGroup.gloo(self._store, rank, size, prefix=prefix + "/gloo",
                                               iface=os.environ.get("GLOO_SOCKET_IFNAME", ""),
                                               timeout_s=timeout_s)
        self._device = device
        with torch.no_grad():
            for t in itertools.chain(module.parameters(), module.buffers()):
                self._broadcast(t)
        tensors = [(names.get(id(p), f"param{i}"), p.data_ptr(), p.numel(), _DTYPES[p.dtype])
                   for i, p in enumerate(self._params)]
        self._reducer = _C.Reducer(self._group, self._store, algorithm, tensors,
                                   bucket_bytes=int(bucket_mb * 2**20), timeout_s=timeout_s,
                                   prefix=prefix + "/reducer",
                                   options={k: bool(v) for k, v in algorithm_options.items()})
        self._names = [t[0] for t in tensors]
        self._marked = [False] * len(self._params)
        self._callback_queued = False
        self._hooks = [p.register_post_accumulate_grad_hook(self._hook_for(i))
                       for i, p in enumerate(self._params)]

    # -- torch.nn.Module -----------------------------------------------------
    def forward(self, *args, **kwargs):
        if self.broadcast_buffers and self._group.size > 1:
            with torch.no_grad():
                for b in self.module.buffers():
                    self._broadcast(b)
        return self.module(*args, **kwargs)

    @contextmanager
    def no_sync(self):
        """Accumulates gradients locally (no communication) inside the block."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def close(self):
        """Removes the hooks and releases the communicators."""
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self._reducer = None
        self._group = None

    # -- internals -------------------------------------------------------------
    def _broadcast(self, t):
        if not t.is_contiguous():
            raise ValueError("bagua: cannot broadcast a non-contiguous tensor")
        if t.numel():
            # CUDA: ordered on the current stream both ways, the host does not wait.
            self._group.broadcast(t.data_ptr(), t.numel() * t.element_size(), 0,
                                  self._current_stream())

    def _current_stream(self):
        if self._device.type == "cuda":
            return torch.cuda.current_stream(self._device).cuda_stream
        return 0

    def _sync_stream(self):
        if self._device.type == "cuda":
            self._group.wait_stream(self._current_stream())

    def _hook_for(self, index):
        def hook(param):
            if not self.require_backward_grad_sync or self._reducer is None:
                return
            self._sync_stream()
            self._reducer.mark_ready(index, param.grad.data_ptr())
            self._marked[index] = True
            if not self._callback_queued:
                self._callback_queued = True
                torch.autograd.Variable._execution_engine.queue_callback(self._after_backward)
        return hook

    def _after_backward(self):
        self._callback_queued = False
        missing = [i for i, m in enumerate(self._marked) if not m]
        if missing and not self.find_unused_parameters:
            names = ", ".join(self._names[i] for i in missing[:8])
            raise RuntimeError(
                f"bagua: {len(missing)} parameter(s) received no gradient in this step ({names}); "
                "pass find_unused_parameters=True to treat them as zero"
            )
        for i in missing:
            p = self._params[i]
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            else:
                p.grad.zero_()
            self._sync_stream()
            self._reducer.mark_ready(i, p.grad.data_ptr())
        self._reducer.wait()
        self._marked = [False] * len(self._params)


# The original's DDP-compatible name, and `model.with_bagua(...)`-style helper.
DistributedDataParallel = BaguaDistributedDataParallel


def with_bagua(module, algorithm="gradient_allreduce", **kwargs):
    """Returns `module` wrapped for distributed training with `algorithm`."""
    return BaguaDistributedDataParallel(module, algorithm, **kwargs)
