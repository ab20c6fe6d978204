"""Bagua in C++: Bagua's distributed-training algorithms for PyTorch.

The original API (Bagua 0.9 scripts run unchanged):

    import bagua.torch_api as bagua
    bagua.init_process_group()
    model = model.with_bagua([optimizer], bytegrad.ByteGradAlgorithm())

and a shortcut under torchrun or Lightning:

    model = bagua.BaguaDistributedDataParallel(model, algorithm="bytegrad")

The algorithms run in libbagua (C++/CUDA) on NCCL for CUDA tensors and Gloo
for CPU tensors. `bagua.registry.describe()` lists them;
`bagua.net_plugin_path()` names the Bagua-Net NCCL plugin in this package.
"""
from .env import net_plugin_path

__version__ = "0.1.0"

__all__ = [
    "BaguaDistributedDataParallel",
    "DistributedDataParallel",
    "available_algorithms",
    "check_algorithm",
    "net_plugin_path",
    "with_bagua",
]


def available_algorithms():
    """Names of the algorithms this version builds (from the runtime's registry)."""
    from . import registry

    return registry.available()


def check_algorithm(name):
    """`name` if it is available; ValueError if unknown, NotImplementedError
    if it is one of Bagua's not built yet (both list what is available)."""
    from . import registry

    registry.check_available(name)
    return name


def __getattr__(name):
    # torch is imported only when the torch integration is used.
    if name in ("BaguaDistributedDataParallel", "with_bagua"):
        from . import distributed

        return getattr(distributed, name)
    if name == "DistributedDataParallel":
        from .torch_api.data_parallel import DistributedDataParallel

        return DistributedDataParallel
    if name == "torch_api":
        import importlib

        return importlib.import_module(".torch_api", __name__)
    raise AttributeError(name)
