"""QAdamOptimizer and QAdamAlgorithm (the original's import path). Not
available in this version yet: constructing either raises
NotImplementedError naming the algorithms that are."""
from ... import registry as registry_view
from .native import NativeAlgorithm


class QAdamOptimizer:
    def __init__(self, params, lr=1e-3, warmup_steps=100, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0):
        registry_view.check_available("qadam")


class QAdamAlgorithm(NativeAlgorithm):
    registry_name = "qadam"

    def __init__(self, q_adam_optimizer, hierarchical: bool = True, **options):
        super().__init__(hierarchical=hierarchical, **options)
        self.optimizer = q_adam_optimizer
