"""GradientAllReduceAlgorithm (the original's import path): gradients
averaged (or summed) by allreduce, in the runtime."""
from .native import NativeAlgorithm


class GradientAllReduceAlgorithm(NativeAlgorithm):
    registry_name = "gradient_allreduce"

    def __init__(self, hierarchical: bool = False, average: bool = True, **options):
        """hierarchical: reduce inside each node first, then among node
        leaders; average: mean over ranks (False: sum)."""
        super().__init__(hierarchical=hierarchical, average=average, **options)
