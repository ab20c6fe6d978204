"""DecentralizedAlgorithm and LowPrecisionDecentralizedAlgorithm (the
original's import path). Not available in this version yet: constructing
one raises NotImplementedError naming the algorithms that are."""
from .native import NativeAlgorithm


class DecentralizedAlgorithm(NativeAlgorithm):
    registry_name = "decentralized"

    def __init__(self, hierarchical: bool = True, peer_selection_mode: str = "all",
                 communication_interval: int = 1, **options):
        super().__init__(hierarchical=hierarchical, peer_selection_mode=peer_selection_mode,
                         communication_interval=communication_interval, **options)


class LowPrecisionDecentralizedAlgorithm(NativeAlgorithm):
    registry_name = "low_precision_decentralized"

    def __init__(self, hierarchical: bool = True, communication_interval: int = 1, **options):
        super().__init__(hierarchical=hierarchical,
                         communication_interval=communication_interval, **options)
