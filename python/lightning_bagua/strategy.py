"""BaguaStrategy: Lightning's DDP machinery (launch, process group, samplers,
checkpointing, collectives for logging) with the model made data-parallel
by one of Bagua's algorithms (bagua.torch_api's DistributedDataParallel on
libbagua) instead of torch's DDP.

The original strategy's arguments are accepted: `algorithm`, `flatten` and
`**bagua_kwargs`, the algorithm's options (hierarchical, average,
peer_selection_mode, communication_interval, sync_interval_ms,
warmup_steps, and local SGD's and DiLoCo's sync_every, outer_lr,
fragments, compression...), checked against the runtime's registry when the strategy
is built, so a wrong option fails at once naming the option and the
algorithm. Manual optimization works: gradients are averaged in
`manual_backward`, as in automatic optimization.
"""
import json
import os
from contextlib import contextmanager

from lightning.fabric.utilities.optimizer import _optimizers_to_device
from lightning.pytorch.overrides.distributed import _sync_module_states
from lightning.pytorch.strategies import DDPStrategy, StrategyRegistry
from lightning.pytorch.trainer.states import TrainerFn

import bagua.torch_api as bagua_api
from bagua import registry
from bagua.torch_api.algorithms import GlobalAlgorithmRegistry
from bagua.torch_api.algorithms.q_adam import QAdamOptimizer
from bagua.torch_api.data_parallel import DistributedDataParallel
from bagua.torch_api.data_parallel import autotune as autotuning


class BaguaStrategy(DDPStrategy):
    """Trains with one of Bagua's algorithms.

    Args:
        algorithm: a name of `bagua.registry.available()` ("gradient_allreduce"
            by default, "bytegrad", ...) or a user-registered one.
        flatten: the original's bucket flattening switch (kept for
            compatibility; the runtime always communicates flat buckets).
        bucket_mb, find_unused_parameters, broadcast_buffers, timeout_s: see
            bagua.BaguaDistributedDataParallel.
        fused_optimizer: the optimizers of configure_optimizers step fused
            (bagua.torch_api.contrib.fuse_optimizer; docs/fused_optimizer.md).
        autotune: see bagua.BaguaDistributedDataParallel (`autotune_state()`
            here returns what autotune chose, also after fit).
        **bagua_kwargs: the algorithm's options.
    """

    strategy_name = "bagua"

    def __init__(self, algorithm="gradient_allreduce", flatten=True, accelerator=None,
                 parallel_devices=None, cluster_environment=None, checkpoint_io=None,
                 precision_plugin=None, process_group_backend=None, bucket_mb=None,
                 find_unused_parameters=False, broadcast_buffers=True, timeout_s=None,
                 fused_optimizer=False, autotune=None, **bagua_kwargs):
        # Checked here so that a wrong name or option fails now; QAdam is built
        # at setup, with the QAdamOptimizer that configure_optimizers returns.
        self._bagua_algorithm_factory = GlobalAlgorithmRegistry.get(algorithm)
        autotuning.resolve(autotune)  # a bad value or an unreadable file fails now
        if algorithm == "qadam":
            registry.check_available(algorithm)
            registry.resolve_options(algorithm, bagua_kwargs)
        else:  # the algorithm's own constructor (DiLoCo's compression=None, for one)
            self._bagua_algorithm_factory(**bagua_kwargs)
        super().__init__(accelerator=accelerator, parallel_devices=parallel_devices,
                         cluster_environment=cluster_environment, checkpoint_io=checkpoint_io,
                         precision_plugin=precision_plugin,
                         process_group_backend=process_group_backend)
        self._bagua_algorithm = algorithm
        self._bagua_flatten = flatten
        self._bagua_kwargs = dict(bagua_kwargs)
        self._bagua_options = dict(bucket_cap_mb=bucket_mb,
                                   find_unused_parameters=find_unused_parameters,
                                   broadcast_buffers=broadcast_buffers, timeout_s=timeout_s,
                                   fused_optimizer=fused_optimizer, autotune=autotune)
        self._bagua_autotune_state = None

    @property
    def algorithm(self):
        return self._bagua_algorithm

    @property
    def restore_checkpoint_after_setup(self):
        """Local SGD and DiLoCo keep state in the module's state_dict
        (`_bagua_<name>.*`: the start point, outer momentum, step counts),
        which only the wrapped model can take back: restore after setup."""
        return self._bagua_algorithm in ("local_sgd", "diloco")

    def autotune_state(self, path=None):
        """What autotune chose (docs/autotune.md): from the running model, or
        as it was at the end of the last fit. With `path`, rank 0 writes it."""
        if isinstance(self.model, DistributedDataParallel):
            return self.model.autotune_state(path)
        if self._bagua_autotune_state is None:
            raise RuntimeError("BaguaStrategy.autotune_state(): the model was not wrapped yet "
                               "(call it during or after fit)")
        if path is not None and self.global_rank == 0:
            with open(path, "w") as f:
                json.dump(self._bagua_autotune_state, f, indent=1)
        return dict(self._bagua_autotune_state)

    def setup_distributed(self):
        """DDPStrategy's, then what bagua.torch_api reads, as the original
        strategy set it: Lightning's launcher sets LOCAL_RANK, NODE_RANK and
        WORLD_SIZE but not RANK or LOCAL_WORLD_SIZE (bagua.get_rank() was 0
        on every rank), and Bagua's default group on torch's."""
        super().setup_distributed()
        os.environ.update(RANK=str(self.global_rank), WORLD_SIZE=str(self.world_size),
                          LOCAL_RANK=str(self.local_rank), NODE_RANK=str(self.node_rank),
                          LOCAL_WORLD_SIZE=str(self.num_processes))
        if not bagua_api.is_initialized():
            bagua_api.init_process_group()

    def setup(self, trainer):
        """DDPStrategy.setup with the optimizers set up before the model is
        wrapped (as the original strategy did): the engine broadcasts their
        state, hooks their steps, and QAdam needs its optimizer."""
        self.accelerator.setup(trainer)
        fitting = trainer.state.fn == TrainerFn.FITTING
        if fitting and self._layer_sync:
            self.model = self._layer_sync.apply(self.model)
        self.precision_plugin.convert_module(self.model)
        self.model_to_device()
        if fitting:
            self.setup_optimizers(trainer)
            _optimizers_to_device(self.optimizers, self.root_device)
            self.configure_ddp()
        else:
            _sync_module_states(self.model)
        self.setup_precision_plugin()

    def _setup_model(self, model):
        kwargs = dict(self._bagua_kwargs)
        if self._bagua_algorithm == "qadam":
            kwargs["q_adam_optimizer"] = self._qadam_optimizer()
        algorithm = self._bagua_algorithm_factory(**kwargs)
        return DistributedDataParallel(model, optimizers=self.optimizers, algorithm=algorithm,
                                       gradient_as_bucket_view=self._bagua_flatten,
                                       **self._bagua_options)

    def _qadam_optimizer(self):
        """The one QAdamOptimizer of configure_optimizers (as the original strategy)."""
        found = [o for o in self.optimizers if isinstance(o, QAdamOptimizer)]
        if len(found) != 1 or len(self.optimizers) != 1:
            raise ValueError(
                "BaguaStrategy(algorithm='qadam') needs configure_optimizers to return exactly "
                "one bagua.torch_api.algorithms.q_adam.QAdamOptimizer, got "
                f"{[type(o).__name__ for o in self.optimizers]}")
        return found[0]

    def _register_ddp_hooks(self):
        # torch DDP comm hooks do not apply: Bagua's algorithm is the hook.
        pass

    @contextmanager
    def block_backward_sync(self):
        """Gradient accumulation: no communication until the last micro-batch."""
        if isinstance(self.model, DistributedDataParallel):
            with self.model.no_sync():
                yield None
        else:
            yield None

    def post_training_step(self):
        # DDPStrategy re-enables torch DDP's gradient sync here for manual
        # optimization; Bagua's engine keeps its own switch (no_sync()).
        pass

    def teardown(self):
        if isinstance(self.model, DistributedDataParallel):
            abort = getattr(self.model.bagua_algorithm, "abort", None)
            if abort is not None:  # async: stop averaging, end with identical weights
                abort(self.model)
            self._bagua_autotune_state = self.model.autotune_state()
            self.model.close()
            self.model = self.lightning_module
        super().teardown()

    @classmethod
    def register_strategies(cls, strategy_registry):
        strategy_registry.register("bagua", cls, description="Bagua's algorithms (libbagua)",
                                   override=True)


BaguaStrategy.register_strategies(StrategyRegistry)
