"""AsyncModelAverageAlgorithm (the original's import path): asynchronous
model average.

During `warmup_steps` training steps the gradients are averaged
synchronously (the runtime's gradient allreduce). Then every rank trains
without waiting while the runtime averages the weights in the background
every `sync_interval_ms`, on its own communicator (its own NCCL stream):
a snapshot of the weights is taken at a step boundary (the forward
pre-hook, on the training's stream), summed across ranks off the training's
stream, and applied at a later step boundary as w <- w + mean - snapshot.
The weights are only touched at step boundaries, so never while the
optimizer writes them (runtime/algorithms/async_model_average.h).

`model.bagua_algorithm.abort(model)` stops the rounds on every rank (it is
collective) and averages once more, so all ranks hold the same weights
(evaluate or checkpoint then); `resume(model)` starts the rounds again.
"""
import torch

from ..process_group import BaguaCommunicator
from .base import AlgorithmImpl
from .native import NativeAlgorithm, NativeAlgorithmImpl

_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


class _AsyncBackend:
    """The runtime's AsyncModelAverage over the engine's own communicator."""

    def __init__(self, ddp, tensors, interval_ms):
        from ... import _C

        self._params = [t.proxy for t in tensors]
        self._layout = [(p.data_ptr(), p.numel()) for p in self._params]
        specs = []
        for t in tensors:
            p = t.proxy
            if p.dtype not in _DTYPES:
                raise ValueError(f"async: {t.bagua_tensor_name} has dtype {p.dtype}; "
                                 f"supported: {', '.join(map(str, _DTYPES))}")
            specs.append((t.bagua_tensor_name, p.data_ptr(), p.numel(), _DTYPES[p.dtype]))
        self._device = ddp.device
        self._comm = BaguaCommunicator(ddp.process_group, f"{ddp.comm.kind}/async",
                                       ddp.process_group.ranks)
        self.averager = _C.AsyncModelAverage(self._comm.backend(ddp.device), specs,
                                             interval_ms=float(interval_ms),
                                             timeout_s=ddp.timeout_s)

    def stream(self):
        if self._device.type == "cuda":
            return torch.cuda.current_stream(self._device).cuda_stream
        return 0

    def check_parameters(self):
        now = [(p.data_ptr(), p.numel()) for p in self._params]
        if now != self._layout:
            changed = [i for i, (a, b) in enumerate(zip(now, self._layout)) if a != b]
            raise ValueError(f"async: parameter(s) {changed[:5]} changed shape or storage since "
                             "the averaging started; the model must keep its parameters (call "
                             "with_bagua again after changing them)")

    def close(self):
        self.averager = None
        self._comm.release()


class AsyncModelAverageAlgorithmImpl(NativeAlgorithmImpl):
    autotune_unsupported = ("it averages the weights in the background, not bucket by bucket "
                            "in the step, so there is no bucket size to tune")

    def __init__(self, process_group, options):
        super().__init__(process_group, "async", options)
        self.warmup_steps = int(options["warmup_steps"])
        self.interval_ms = int(options["sync_interval_ms"])
        self._ddp = None
        self._async = None

    def _warming_up(self):
        return self._ddp.bagua_train_step_counter < self.warmup_steps

    def need_reset(self):
        return self._async is None and not self._warming_up()

    def init_tensors(self, bagua_ddp):
        self._ddp = bagua_ddp
        if self._warming_up():
            return AlgorithmImpl.init_tensors(self, bagua_ddp)
        return self.weight_tensors(bagua_ddp.bagua_build_params())

    def make_backend(self, bagua_ddp, buckets):
        tensors = [t for bucket in buckets for t in bucket.tensors]
        if self._warming_up():
            return self.warmup_backend(bagua_ddp, tensors)
        self._async = _AsyncBackend(bagua_ddp, tensors, self.interval_ms)
        self._async.averager.resume()
        return self._async

    def init_forward_pre_hook(self, bagua_ddp):
        if self._async is None:
            return super().init_forward_pre_hook(bagua_ddp)

        def hook(inputs):
            self._async.check_parameters()
            self._async.averager.step_boundary(self._async.stream())

        return hook

    def init_backward_hook(self, bagua_ddp):
        if self._async is None:
            return super().init_backward_hook(bagua_ddp)
        return lambda name, param: None

    def init_post_backward_hook(self, bagua_ddp):
        if self._async is None:
            return super().init_post_backward_hook(bagua_ddp)
        return lambda: None

    # -- the original's controls ------------------------------------------------
    def abort(self, bagua_ddp=None):
        """Collective: stops the background averaging on every rank and
        averages once more synchronously (all ranks then hold the same
        weights). Nothing to do during the warm-up."""
        if self._async is not None:
            self._async.averager.abort(self._async.stream())

    def resume(self, bagua_ddp=None):
        """Starts the background averaging again (after abort)."""
        if self._async is not None:
            self._async.averager.resume()

    @property
    def averages(self):
        """Background averages applied so far."""
        return self._async.averager.averages if self._async is not None else 0


class AsyncModelAverageAlgorithm(NativeAlgorithm):
    registry_name = "async"

    def __init__(self, peer_selection_mode: str = "all", sync_interval_ms: int = 500,
                 warmup_steps: int = 0, **options):
        super().__init__(peer_selection_mode=peer_selection_mode,
                         sync_interval_ms=sync_interval_ms, warmup_steps=warmup_steps, **options)

    def reify(self, process_group):
        return AsyncModelAverageAlgorithmImpl(process_group, self.options)
