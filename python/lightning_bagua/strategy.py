"""BaguaStrategy: Lightning's DDP machinery (launch, process group, samplers,
checkpointing, collectives for logging) with the model wrapped by
bagua.BaguaDistributedDataParallel instead of torch's DDP, so gradients are
averaged by Bagua's algorithms in libbagua.
"""
from lightning.pytorch.strategies import DDPStrategy, StrategyRegistry

from bagua.distributed import BaguaDistributedDataParallel
from bagua.env import check_algorithm


class BaguaStrategy(DDPStrategy):
    """Trains with one of Bagua's algorithms.

    Args:
        algorithm: "gradient_allreduce" (default) or "bytegrad" (the original's
            other names raise NotImplementedError listing what exists).
        bucket_mb, find_unused_parameters, broadcast_buffers, timeout_s: see
            bagua.BaguaDistributedDataParallel.
        **bagua_kwargs: algorithm options (average, error_feedback).
    """

    strategy_name = "bagua"

    def __init__(self, algorithm="gradient_allreduce", accelerator=None, parallel_devices=None,
                 cluster_environment=None, checkpoint_io=None, precision_plugin=None,
                 process_group_backend=None, bucket_mb=10, find_unused_parameters=False,
                 broadcast_buffers=True, timeout_s=300.0, **bagua_kwargs):
        check_algorithm(algorithm)
        super().__init__(accelerator=accelerator, parallel_devices=parallel_devices,
                         cluster_environment=cluster_environment, checkpoint_io=checkpoint_io,
                         precision_plugin=precision_plugin,
                         process_group_backend=process_group_backend)
        self._bagua_algorithm = algorithm
        self._bagua_kwargs = dict(bagua_kwargs)
        self._bagua_options = dict(bucket_mb=bucket_mb,
                                   find_unused_parameters=find_unused_parameters,
                                   broadcast_buffers=broadcast_buffers, timeout_s=timeout_s)

    @property
    def algorithm(self):
        return self._bagua_algorithm

    def _setup_model(self, model):
        return BaguaDistributedDataParallel(model, self._bagua_algorithm, **self._bagua_options,
                                            **self._bagua_kwargs)

    def _register_ddp_hooks(self):
        # torch DDP comm hooks do not apply: Bagua's algorithm is the hook.
        pass

    def teardown(self):
        if isinstance(self.model, BaguaDistributedDataParallel):
            self.model.close()
            self.model = self.lightning_module
        super().teardown()

    @classmethod
    def register_strategies(cls, strategy_registry):
        strategy_registry.register("bagua", cls, description="Bagua's algorithms (libbagua)",
                                   override=True)


BaguaStrategy.register_strategies(StrategyRegistry)
