"""Data parallelism: the DDP-compatible `DistributedDataParallel` and the
engine behind it and `with_bagua` (`BaguaDistributedDataParallel`), and
`Autotune` (the settings of `autotune=`, docs/autotune.md)."""
from .autotune_settings import Autotune  # noqa: F401
from .bagua_distributed import BaguaDistributedDataParallel  # noqa: F401
from .distributed import DistributedDataParallel, to_bagua_process_group  # noqa: F401
