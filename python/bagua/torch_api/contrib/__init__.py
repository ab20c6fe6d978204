"""bagua.torch_api.contrib: the original's extra tools. SyncBatchNorm, the
generic fused optimizer (fuse_optimizer, with the Lamb optimizer its native
kernel serves), the cached dataset (CachedDataset, CacheLoader) and the
load-balanced samplers."""
from .cache_loader import CacheLoader  # noqa: F401
from .cached_dataset import CachedDataset  # noqa: F401
from .fuse import Lamb, fuse_optimizer, is_fused  # noqa: F401
from .load_balancing_data_loader import (  # noqa: F401
    LoadBalancingDistributedBatchSampler,
    LoadBalancingDistributedSampler,
)
from .sync_batchnorm import SyncBatchNorm  # noqa: F401
