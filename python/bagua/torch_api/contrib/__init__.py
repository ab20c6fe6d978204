"""bagua.torch_api.contrib: the original's extra tools. SyncBatchNorm, the
cached dataset (CachedDataset, CacheLoader) and the load-balanced samplers
are here; the fused optimizer arrives with its own issue (until then a clear
error names what exists)."""
from .cache_loader import CacheLoader  # noqa: F401
from .cached_dataset import CachedDataset  # noqa: F401
from .load_balancing_data_loader import (  # noqa: F401
    LoadBalancingDistributedBatchSampler,
    LoadBalancingDistributedSampler,
)
from .sync_batchnorm import SyncBatchNorm  # noqa: F401

_NOT_YET = {
    "fuse_optimizer": "the generic fused optimizer",
}


def __getattr__(name):
    if name in _NOT_YET:
        raise NotImplementedError(
            f"bagua.torch_api.contrib.{name} ({_NOT_YET[name]}) is not available in this "
            "version yet; contrib has: SyncBatchNorm, CachedDataset, CacheLoader, "
            "LoadBalancingDistributedSampler, LoadBalancingDistributedBatchSampler")
    raise AttributeError(name)
