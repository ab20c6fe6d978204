"""The original's algorithm plug-in API: an `Algorithm` (what the user
constructs, e.g. ByteGradAlgorithm()) reifies into an `AlgorithmImpl` on a
process group; the training engine (data_parallel/bagua_distributed.py)
calls the impl's hooks. Bagua's own algorithms are implemented in the
runtime (native.py drives them); a user-defined algorithm subclasses these
two classes and appends Python operations to buckets, as in the original:

    class MyImpl(AlgorithmImpl):
        def init_operations(self, bagua_ddp, bucket):
            bucket.clear_ops()
            def average(name):
                for t in bucket.tensors:
                    allreduce_inplace(t.bagua_getter_closure(), op=ReduceOp.AVG)
            bucket.append_python_op(average, group=self.process_group)

    class MyAlgorithm(Algorithm):
        def reify(self, process_group):
            return MyImpl(process_group)

    GlobalAlgorithmRegistry.register("my_allreduce", MyAlgorithm, description="...")
"""
from ... import registry as registry_view
from ..bucket import BaguaBucket
from ..tensor import BaguaTensor

__all__ = ["Algorithm", "AlgorithmImpl", "GlobalAlgorithmRegistry"]


class Algorithm:
    """Base of every algorithm a user passes to `with_bagua`."""

    def reify(self, process_group):
        """The implementation of this algorithm on `process_group`."""
        raise NotImplementedError(f"{type(self).__name__} must implement reify(process_group)")

    @classmethod
    def init(cls, name, **kwargs):
        """The registered algorithm `name` built with `kwargs`, e.g.
        Algorithm.init("bytegrad", average=False)."""
        return GlobalAlgorithmRegistry.get(name)(**kwargs)


class AlgorithmImpl:
    """Hooks the engine calls; the defaults communicate gradients through
    the bucket operations of `init_operations` (override it)."""

    # Why autotune cannot rebuild this algorithm's buckets mid-training (its
    # state lives in them), or None: the autotuner may re-run the init_*
    # methods at a step boundary with another bucket size, as need_reset does.
    autotune_unsupported = None

    def __init__(self, process_group):
        self.process_group = process_group

    def need_reset(self):
        """True to re-run every init_* method before the next forward (e.g.
        at the end of a warm-up)."""
        return False

    def init_tensors(self, bagua_ddp):
        """The tensors to communicate: each parameter's gradient, in reverse
        parameter order (about the order backward produces them)."""
        tensors = []
        for name, param in reversed(bagua_ddp.bagua_build_params()):
            tensors.append(BaguaTensor(name, param, getter=_grad_of, setter=_set_grad))
        self._communication_tensor_names = {t.bagua_tensor_name for t in tensors}
        return tensors

    def tensors_to_buckets(self, tensors, do_flatten):
        """Buckets from the engine's suggested grouping."""
        return [BaguaBucket(group, flatten=do_flatten, name=str(i))
                for i, group in enumerate(tensors)]

    def init_forward_pre_hook(self, bagua_ddp):
        def hook(input):
            pass

        return hook

    def init_backward_hook(self, bagua_ddp):
        """Called with (parameter name, parameter) once its gradient is ready."""

        def hook(parameter_name, parameter):
            if parameter_name in self._communication_tensor_names:
                bagua_ddp._bagua_backend.mark_communication_ready(parameter_name)

        return hook

    def init_post_backward_hook(self, bagua_ddp):
        def hook():
            bagua_ddp._bagua_backend.wait_pending_comm_ops()

        return hook

    def init_post_optimizer_step_hook(self, bagua_ddp):
        def hook(optimizer):
            pass

        return hook

    def init_operations(self, bagua_ddp, bucket):
        """Append the operations that run on `bucket` once all its tensors
        are ready (bucket.append_python_op, append_centralized_synchronous_op)."""

    def make_backend(self, bagua_ddp, buckets):
        """What runs the buckets' operations (the engine calls it once the
        buckets exist): for Python operations, bucket by bucket in order."""
        from ..bucket import PythonBucketBackend

        return PythonBucketBackend(buckets)


def _grad_of(param):
    if param.grad is None:
        import torch

        param.grad = torch.zeros_like(param)
    return param.grad


def _set_grad(param, tensor):
    param.grad = tensor


class UnknownAlgorithmError(KeyError, ValueError):
    """No algorithm has that name (a KeyError, as the original's registry
    lookup raised; a ValueError, as this version's did)."""

    def __str__(self):
        return str(self.args[0])


class _AlgorithmRegistry(dict):
    """name -> {"algorithm": class, "description": str}. Bagua's own
    algorithms come from the runtime's registry (bagua.registry) and are
    looked up on demand (`name in`, `[name]`, get); users add theirs with
    register()."""

    def __contains__(self, name):
        return dict.__contains__(self, name) or name in registry_view.names()

    def __getitem__(self, name):
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        if name in registry_view.names():
            from .native import native_class

            return {"algorithm": native_class(name),
                    "description": registry_view.entry(name)["description"]}
        raise UnknownAlgorithmError(f"unknown algorithm {name!r}; available: "
                                    f"{', '.join(self.available_algorithms())}")

    def register(self, name, algorithm, description=None):
        if not isinstance(name, str) or not name:
            raise TypeError(f"an algorithm name must be a non-empty str, got {name!r}")
        if name in self:
            raise ValueError(f"algorithm {name!r} is already registered")
        self[name] = {"algorithm": algorithm, "description": description or ""}

    def get(self, name):
        """The class registered as `name` (Bagua's or a user's)."""
        return self[name]["algorithm"]

    def _users(self):
        return list(dict.keys(self))

    # Iterating, as the original's dict of every algorithm: Bagua's names
    # first (the runtime's registry), then the users'.
    def __iter__(self):
        return iter(list(registry_view.names()) + self._users())

    def __len__(self):
        return len(registry_view.names()) + dict.__len__(self)

    def keys(self):
        return list(self)

    def values(self):
        return [self[name] for name in self]

    def items(self):
        return [(name, self[name]) for name in self]

    def available_algorithms(self):
        return list(registry_view.available()) + self._users()

    def __str__(self):
        return "Registered Algorithms: " + ", ".join(self)


GlobalAlgorithmRegistry = _AlgorithmRegistry()
