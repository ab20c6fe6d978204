"""ByteGradAlgorithm (the original's import path): gradients averaged in 8
bits (MinMaxUInt8 scatter-reduce and allgather), in the runtime."""
from .native import NativeAlgorithm


class ByteGradAlgorithm(NativeAlgorithm):
    registry_name = "bytegrad"

    def __init__(self, hierarchical: bool = True, average: bool = True,
                 error_feedback: bool = False, **options):
        """hierarchical: compress among node leaders only; average: mean over
        ranks (False: sum); error_feedback (new): carry the quantization error
        into the next step."""
        super().__init__(hierarchical=hierarchical, average=average,
                         error_feedback=error_feedback, **options)
