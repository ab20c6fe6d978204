"""Data parallelism: the DDP-compatible `DistributedDataParallel` and the
engine behind it and `with_bagua` (`BaguaDistributedDataParallel`), and
`Autotune` (the settings of `autotune=`, docs/autotune.md)."""
from .autotune_settings import Autotune  # noqa: F401
from .bagua_distributed import BaguaDistributedDataParallel  # noqa: F401
from .distributed import (DistributedDataParallel, DistributedDataParallel_V1_9_0,  # noqa: F401
                          to_bagua_process_group)
from . import functional  # noqa: F401,E402
