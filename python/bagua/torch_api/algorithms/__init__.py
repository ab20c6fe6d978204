"""Algorithms at the original's import paths, on the runtime's registry.
`str(GlobalAlgorithmRegistry)` lists every name; `Algorithm.init(name,
**options)` builds one by name."""
from . import (async_model_average, bytegrad, decentralized, diloco, gradient_allreduce,  # noqa
               local_sgd, q_adam)
from .base import Algorithm, AlgorithmImpl, GlobalAlgorithmRegistry  # noqa: F401
from .native import NativeAlgorithm  # noqa: F401
