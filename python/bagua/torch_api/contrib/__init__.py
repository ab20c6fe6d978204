"""bagua.torch_api.contrib: the original's extra tools. SyncBatchNorm and
the generic fused optimizer (fuse_optimizer, with the Lamb optimizer its
native kernel serves) are here; the cached dataset and the load-balanced
sampler arrive with their own issues (until then a clear error names what
exists)."""
from .fuse import Lamb, fuse_optimizer, is_fused  # noqa: F401
from .sync_batchnorm import SyncBatchNorm  # noqa: F401

_NOT_YET = {
    "CachedDataset": "the cached dataset",
    "CacheLoader": "the cache loader",
    "LoadBalancingDistributedSampler": "the load-balanced sampler",
    "LoadBalancingDistributedBatchSampler": "the load-balanced batch sampler",
}


def __getattr__(name):
    if name in _NOT_YET:
        raise NotImplementedError(
            f"bagua.torch_api.contrib.{name} ({_NOT_YET[name]}) is not available in this "
            "version yet; contrib has: SyncBatchNorm, fuse_optimizer, Lamb")
    raise AttributeError(name)
