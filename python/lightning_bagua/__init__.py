"""Lightning strategy for Bagua: `Trainer(strategy=BaguaStrategy(algorithm="bytegrad"))`,
or `Trainer(strategy="bagua")` once this module is imported (it registers the name)."""
from .strategy import BaguaStrategy

__all__ = ["BaguaStrategy"]
