"""The short entry point kept from earlier versions:

    model = bagua.BaguaDistributedDataParallel(model, algorithm="bytegrad")

under torchrun (after torch.distributed.init_process_group) or Lightning.
It is the original API's DistributedDataParallel with the algorithm named
second; everything else is keyword-only (DDP's keywords included, so
`device_ids=[0]` is DDP's, never an algorithm option). The original API
(`import bagua.torch_api as bagua`, `model.with_bagua(...)`) is the way
Bagua scripts are written; this is a shortcut onto it.
"""
from ..torch_api.data_parallel.distributed import DistributedDataParallel


class BaguaDistributedDataParallel(DistributedDataParallel):
    """Wraps `module`; averages its gradients across ranks with `algorithm`
    (a registry name or an Algorithm).

    Args:
        module: the model (all parameters on one device, CPU or one GPU).
        algorithm: a name of bagua.registry.available() or an Algorithm.
        optimizers: the module's optimizers (their state is broadcast from rank 0).
        bucket_mb: bucket size in MiB (default 10, or BAGUA_DEFAULT_BUCKET_SIZE).
        find_unused_parameters, broadcast_buffers, device_ids, output_device,
        process_group: as torch's DistributedDataParallel.
        timeout_s: how long a step may wait for its collectives (BAGUA_TIMEOUT_S, 300).
        fused_optimizer: make the optimizers fused (contrib.fuse_optimizer) first.
        autotune: True to tune the bucket size online from measured step
            times, a path to an earlier `autotune_state()` JSON to reuse its
            winner, or an Autotune (docs/autotune.md).
        **algorithm_options: the algorithm's options (see bagua.registry.describe()).
    """

    def __init__(self, module, algorithm="gradient_allreduce", *, optimizers=(),
                 process_group=None, bucket_mb=None, find_unused_parameters=False,
                 broadcast_buffers=True, timeout_s=None, device_ids=None, output_device=None,
                 fused_optimizer=False, autotune=None, **algorithm_options):
        super().__init__(module, device_ids=device_ids, output_device=output_device,
                         broadcast_buffers=broadcast_buffers, process_group=process_group,
                         bucket_cap_mb=bucket_mb, find_unused_parameters=find_unused_parameters,
                         optimizers=optimizers, algorithm=algorithm, timeout_s=timeout_s,
                         fused_optimizer=fused_optimizer, autotune=autotune,
                         **algorithm_options)


def with_bagua(module, algorithm="gradient_allreduce", **kwargs):
    """`module` wrapped by BaguaDistributedDataParallel (the original API's
    in-place form is `module.with_bagua([optimizer], algorithm)`)."""
    return BaguaDistributedDataParallel(module, algorithm, **kwargs)
