"""Bagua in C++: Bagua's distributed-training algorithms for PyTorch.

    import bagua
    model = bagua.BaguaDistributedDataParallel(model, algorithm="bytegrad")

The algorithms run in libbagua (C++/CUDA) on NCCL for CUDA tensors and Gloo
for CPU tensors; torch.distributed must be initialised first (torchrun and
Lightning do it). `bagua.net_plugin_path()` names the Bagua-Net NCCL plugin
shipped with this package (set NCCL_NET_PLUGIN to it and NCCL_NET=Bagua).
"""
from .env import KNOWN_ALGORITHMS, check_algorithm, implemented_algorithms, net_plugin_path

__version__ = "0.1.0"

__all__ = [
    "BaguaDistributedDataParallel",
    "DistributedDataParallel",
    "KNOWN_ALGORITHMS",
    "check_algorithm",
    "implemented_algorithms",
    "net_plugin_path",
    "with_bagua",
]


def __getattr__(name):
    # torch is imported only when the torch integration is used.
    if name in ("BaguaDistributedDataParallel", "DistributedDataParallel", "with_bagua"):
        from . import distributed

        return getattr(distributed, name)
    raise AttributeError(name)
