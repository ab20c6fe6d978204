"""LocalSGDAlgorithm (ours; no original import path): post-local SGD.

During `warmup_steps` training steps the gradients are averaged by
gradient allreduce; after that every rank takes purely local optimizer
steps, and after every `sync_every`-th of them the weights are replaced by
their exact average over the ranks (one allreduce of the weights), so all
ranks then hold bit-identical weights. This is PyTorch's
PostLocalSGDOptimizer with PeriodicModelAverager, in the runtime
(runtime/algorithms/local_sgd.h); with `sync_every=1` and plain SGD it is
gradient allreduce. Bytes per rank: 2 (n-1)/n x the model every
`sync_every` steps. Checkpoints, warm-up and byte counts: local_steps.py.
"""
from .local_steps import LocalStepsImpl
from .native import NativeAlgorithm


class LocalSGDAlgorithmImpl(LocalStepsImpl):
    def __init__(self, process_group, options):
        super().__init__(process_group, "local_sgd", options)

    def make_runtime(self, ddp, specs):
        from ... import _C

        return _C.LocalSGD(ddp.backend(), specs, sync_every=self.sync_every,
                           timeout_s=ddp.timeout_s)

    @property
    def syncs(self):
        """Averages done since the end of the warm-up."""
        return self.runtime.syncs if self.runtime is not None else 0


class LocalSGDAlgorithm(NativeAlgorithm):
    registry_name = "local_sgd"

    def __init__(self, sync_every: int = 16, warmup_steps: int = 0, **options):
        """sync_every: local optimizer steps between two exact averages of the
        weights (H >= 1); warmup_steps: gradient allreduce steps first."""
        super().__init__(sync_every=sync_every, warmup_steps=warmup_steps, **options)

    def reify(self, process_group):
        return LocalSGDAlgorithmImpl(process_group, self.options)
