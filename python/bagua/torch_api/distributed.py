"""`torch.nn.Module.with_bagua(optimizers, algorithm, process_group=None,
do_flatten=True, fused_optimizer=False, autotune=None)`, installed on torch.nn.Module when bagua.torch_api is
imported, as the original did: the module itself is made distributed (its
hooks installed in place) and returned, so its state_dict keys stay the
user's. `module.bagua_algorithm` is the algorithm's implementation,
`module.bagua_module_name` its name, `module.bagua_ddp` the engine.
`autotune` is this version's addition (docs/autotune.md);
`module.bagua_ddp.autotune_state()` says what it chose."""
import torch

from .data_parallel.bagua_distributed import BaguaDistributedDataParallel
from .data_parallel.distributed import make_algorithm, to_bagua_process_group


def with_bagua(self, optimizers, algorithm, process_group=None, do_flatten=True,
               fused_optimizer=False, autotune=None):
    """Makes this module data-parallel with `algorithm` (an Algorithm, or a
    registry name such as "bytegrad") over `process_group` (default: the
    default group). Parameters, buffers and the optimizers' state are
    broadcast from rank 0 first. fused_optimizer=True makes the optimizers
    fused (bagua.torch_api.contrib.fuse_optimizer) first. `autotune`: True,
    a saved state's path, or an Autotune (tunes the bucket size). Returns the
    module itself."""
    if not hasattr(self, "_bagua_module_name"):
        self._bagua_module_name = f"{type(self).__name__}_{id(self)}"
    previous = self.__dict__.get("bagua_ddp")
    if previous is not None:
        previous.close()
    self.bagua_ddp = BaguaDistributedDataParallel(
        self, list(optimizers), make_algorithm(algorithm, {}),
        process_group=to_bagua_process_group(process_group),
        bagua_module_name=self._bagua_module_name, gradient_as_bucket_view=do_flatten,
        fused_optimizer=fused_optimizer, autotune=autotune)
    return self


def _engine(module):
    engine = module.__dict__.get("bagua_ddp")
    if engine is None:
        raise AttributeError(f"{type(module).__name__} has no Bagua state: call "
                             "module.with_bagua(optimizers, algorithm) first")
    return engine


def _bagua_module_name(self):
    return self.__dict__.get("_bagua_module_name", f"{type(self).__name__}_{id(self)}")


def _set_bagua_module_name(self, name):
    self._bagua_module_name = name


class BaguaModule:
    """What bagua.torch_api adds to every torch.nn.Module (the original's
    class of the same name, whose members it copied onto torch.nn.Module)."""

    with_bagua = with_bagua
    bagua_module_name = property(_bagua_module_name, _set_bagua_module_name)
    bagua_algorithm = property(lambda self: _engine(self).bagua_algorithm)
    bagua_optimizers = property(lambda self: _engine(self).bagua_optimizers)
    bagua_buckets = property(lambda self: _engine(self).bagua_buckets)


_MEMBERS = ("with_bagua", "bagua_module_name", "bagua_algorithm", "bagua_optimizers",
            "bagua_buckets")


def install():
    """Adds BaguaModule's members (with_bagua and the bagua_* properties) to
    torch.nn.Module."""
    for name in _MEMBERS:
        setattr(torch.nn.Module, name, BaguaModule.__dict__[name])


install()
