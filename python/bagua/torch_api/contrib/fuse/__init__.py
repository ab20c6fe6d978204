"""bagua.torch_api.contrib.fuse: the generic fused optimizer (see optimizer.py)."""
from .lamb import Lamb  # noqa: F401
from .optimizer import fuse_optimizer, fuse_step, is_fused, is_fused_optimizer  # noqa: F401
