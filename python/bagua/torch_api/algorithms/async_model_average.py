"""AsyncModelAverageAlgorithm (the original's import path). Not available in
this version yet: constructing one raises NotImplementedError naming the
algorithms that are."""
from .native import NativeAlgorithm


class AsyncModelAverageAlgorithm(NativeAlgorithm):
    registry_name = "async"

    def __init__(self, peer_selection_mode: str = "all", sync_interval_ms: int = 500,
                 warmup_steps: int = 0, **options):
        super().__init__(peer_selection_mode=peer_selection_mode,
                         sync_interval_ms=sync_interval_ms, warmup_steps=warmup_steps, **options)
