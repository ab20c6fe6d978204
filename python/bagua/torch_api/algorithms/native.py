"""Bagua's own algorithms, implemented in the runtime (libbagua) and driven
through its registry: `NativeAlgorithm` checks the options against the
registry's schema; its impl hands the gradients to the runtime's Reducer,
which buckets them, launches each bucket in order as its gradients become
ready (overlapping backward), and is waited for once after backward."""
from ... import registry as registry_view
from .base import Algorithm, AlgorithmImpl


class NativeAlgorithm(Algorithm):
    """An algorithm of the runtime's registry, by name, with its options."""

    registry_name = None  # set by the classes at the original's import paths

    def __init__(self, name=None, **options):
        self.name = name or self.registry_name
        registry_view.check_available(self.name)
        self.options = registry_view.resolve_options(self.name, options)

    def reify(self, process_group):
        entry = registry_view.entry(self.name)
        if entry["communicates"] != "gradients" or entry["trigger"] != "tensor_ready":
            raise NotImplementedError(f"the engine does not drive {self.name!r} yet")
        return NativeAlgorithmImpl(process_group, self.name, self.options)

    def __repr__(self):
        opts = ", ".join(f"{k}={v!r}" for k, v in sorted(self.options.items()))
        return f"{type(self).__name__}({opts})"


class NativeAlgorithmImpl(AlgorithmImpl):
    """Gradients through the runtime's Reducer; no Python bucket operations."""

    def __init__(self, process_group, name, options):
        super().__init__(process_group)
        self.name = name
        self.options = dict(options)

    def weight_tensors(self, params):
        """The parameters themselves (not their gradients) as the tensors to
        communicate: algorithms on the weights."""
        from ..tensor import BaguaTensor

        tensors = [BaguaTensor(n, p, getter=lambda p: p.data, setter=None) for n, p in params]
        self._communication_tensor_names = {t.bagua_tensor_name for t in tensors}
        return tensors

    @staticmethod
    def warmup_backend(bagua_ddp, tensors):
        """Flat gradient allreduce (mean) in the Reducer: the warm-up of the
        algorithms that switch to their own communication afterwards."""
        from ..data_parallel.native_backend import NativeBackend

        return NativeBackend(bagua_ddp, "gradient_allreduce",
                             {"hierarchical": False, "average": True}, tensors)

    def make_backend(self, bagua_ddp, buckets):
        from ..data_parallel.native_backend import NativeBackend

        tensors = [t for bucket in buckets for t in bucket.tensors]
        return NativeBackend(bagua_ddp, self.name, self.options, tensors)


def native_class(name):
    """The class users construct for registry algorithm `name` (the one at
    the original's import path where there is one)."""
    from . import (async_model_average, bytegrad, decentralized, diloco, gradient_allreduce,
                   local_sgd, q_adam)

    for module in (gradient_allreduce, bytegrad, decentralized, q_adam, async_model_average,
                   local_sgd, diloco):
        for value in vars(module).values():
            if isinstance(value, type) and getattr(value, "registry_name", None) == name \
                    and issubclass(value, Algorithm):
                return value

    def build(**options):
        return NativeAlgorithm(name, **options)

    return build
