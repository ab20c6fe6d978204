"""DistributedDataParallel: torch DDP's interface on Bagua's algorithms.

    model = DistributedDataParallel(model, device_ids=[local_rank],
                                    optimizers=[optimizer], algorithm=ByteGradAlgorithm())

It takes DDP's arguments with their meaning: device_ids/output_device must
name the module's own device (one device per process), `bucket_cap_mb` sets
the bucket size (Bagua's default is 10 MiB), `broadcast_buffers` syncs
buffers from rank 0 before each forward, `find_unused_parameters` treats
missing gradients as zero, `no_sync()` accumulates locally. Like torch DDP
it is a module wrapping `module` (state_dict keys gain "module."); for the
user's own keys use `module.with_bagua(...)`. `algorithm` is an Algorithm
or a registry name (then `**algorithm_options` are its options).
`autotune=True` tunes the bucket size online (docs/autotune.md);
`autotune_state()` says what it chose.
"""
from contextlib import contextmanager

import torch
import torch.distributed as dist

from ..algorithms import Algorithm, GlobalAlgorithmRegistry
from ..process_group import BaguaProcessGroup, _get_default_group, from_torch_group
from .bagua_distributed import BaguaDistributedDataParallel

_from_torch = {}


def to_bagua_process_group(process_group=None):
    """A BaguaProcessGroup for a torch ProcessGroup, a BaguaProcessGroup or None
    (the default group)."""
    if process_group is None:
        return _get_default_group()
    if isinstance(process_group, BaguaProcessGroup):
        return process_group
    if isinstance(process_group, dist.ProcessGroup):
        if process_group not in _from_torch:
            _from_torch[process_group] = from_torch_group(process_group)
        return _from_torch[process_group]
    raise TypeError(f"bagua: process_group must be a torch ProcessGroup, a BaguaProcessGroup or "
                    f"None, got {type(process_group).__name__}")


def make_algorithm(algorithm, options):
    """An Algorithm from an Algorithm or a registry name plus options."""
    if algorithm is None:
        algorithm = "gradient_allreduce"
    if isinstance(algorithm, str):
        return GlobalAlgorithmRegistry.get(algorithm)(**options)
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"bagua: algorithm must be an Algorithm or a name, got "
                        f"{type(algorithm).__name__}")
    if options:
        raise ValueError(f"bagua: options {sorted(options)} go to the algorithm's constructor "
                         f"when an Algorithm object ({type(algorithm).__name__}) is passed")
    return algorithm


class DistributedDataParallel(torch.nn.Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=True, optimizers=(), algorithm=None, *, timeout_s=None,
                 fused_optimizer=False, autotune=None, **algorithm_options):
        super().__init__()
        if not any(p.requires_grad for p in module.parameters()):
            raise ValueError("bagua: the module has no parameter that requires a gradient")
        device = next(module.parameters()).device
        for name, value in (("device_ids", device_ids), ("output_device", output_device)):
            self._check_device_arg(name, value, device)
        if dim != 0:
            raise ValueError(f"bagua: dim={dim}: inputs are not scattered (one device per "
                             "process), so only dim=0 is meaningful")
        self.module = module
        self.dim = dim
        if not hasattr(module, "_bagua_module_name"):
            module._bagua_module_name = f"{type(module).__name__}_{id(module)}"
        # One engine per module: a second wrapper (or with_bagua) replaces the
        # first, whose hooks would otherwise go on communicating.
        previous = module.__dict__.get("bagua_ddp")
        if previous is not None:
            previous.close()
        self.inner = BaguaDistributedDataParallel(
            module, list(optimizers), make_algorithm(algorithm, algorithm_options),
            process_group=to_bagua_process_group(process_group),
            bagua_module_name=module._bagua_module_name,
            gradient_as_bucket_view=gradient_as_bucket_view,
            find_unused_parameters=find_unused_parameters,
            bucket_bytes=None if bucket_cap_mb is None else int(bucket_cap_mb * 2**20),
            broadcast_buffers=broadcast_buffers, timeout_s=timeout_s,
            fused_optimizer=fused_optimizer, autotune=autotune)
        module.bagua_ddp = self.inner

    @staticmethod
    def _check_device_arg(name, value, device):
        if value is None:
            return
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if len(values) != 1:
            raise ValueError(f"bagua: {name}={value!r}: one device per process; pass the "
                             f"module's device ({device}) or None")
        given = torch.device(values[0]) if not isinstance(values[0], int) else \
            torch.device("cuda", values[0])
        if given.type != device.type or (given.index is not None and given.index != device.index):
            raise ValueError(f"bagua: {name}={value!r} but the module is on {device}")

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

    @contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside the block; the first backward
        after it communicates the accumulated gradients."""
        previous = self.inner.require_backward_grad_sync
        self.inner.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.inner.require_backward_grad_sync = previous

    @property
    def require_backward_grad_sync(self):
        return self.inner.require_backward_grad_sync

    @property
    def bagua_algorithm(self):
        """The algorithm's implementation (the original's `bagua_algorithm`)."""
        return self.inner.bagua_algorithm

    @property
    def bagua_optimizers(self):
        return self.inner.bagua_optimizers

    @property
    def bagua_module_name(self):
        return self.inner.bagua_module_name

    @property
    def bagua_buckets(self):
        return self.inner.bagua_buckets

    def autotune_state(self, path=None):
        """What autotune decided (docs/autotune.md); with `path`, rank 0
        writes it there as JSON, which autotune=path reuses."""
        return self.inner.autotune_state(path)

    def close(self):
        """Removes the hooks; the wrapped module trains locally afterwards."""
        self.inner.close()


# The original's names of the class (its DistributedDataParallel() built
# one): PyTorch Lightning 1.5-1.9 import DistributedDataParallel_V1_9_0
# whenever bagua is installed, and wrap the model with it by keyword.
DistributedDataParallel_V1_9_0_Interface = DistributedDataParallel


class DistributedDataParallel_V1_9_0(DistributedDataParallel):
    """The original's signature: (module, optimizers, algorithm,
    process_group=None, bagua_module_name=None, gradient_as_bucket_view=True,
    find_unused_parameters=False)."""

    def __init__(self, module, optimizers, algorithm, process_group=None,
                 bagua_module_name=None, gradient_as_bucket_view=True,
                 find_unused_parameters=False):
        if bagua_module_name is not None:
            module._bagua_module_name = bagua_module_name
        super().__init__(module, process_group=process_group,
                         find_unused_parameters=find_unused_parameters,
                         gradient_as_bucket_view=gradient_as_bucket_view,
                         optimizers=optimizers, algorithm=algorithm)
