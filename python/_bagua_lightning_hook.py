"""Registers strategy="bagua" with Lightning without an explicit import.

Loaded at interpreter start by `bagua-lightning.pth` (installed next to the
packages). A top-level module, not part of the `bagua` package, so that a
different `bagua` earlier on sys.path (the original Bagua, a folder named
bagua) is never imported at start-up; the .pth line imports this module
only if it exists, so nothing is printed either way. It imports nothing heavy: it only watches for Lightning's
strategies module and, once that module has executed, imports
lightning_bagua, whose import registers BaguaStrategy as "bagua". Lightning
has no plugin discovery of its own. Any failure here is swallowed: it must
never break interpreter start-up or Lightning itself.
"""
import importlib.abc
import importlib.machinery
import sys

_TARGETS = ("lightning.pytorch.strategies", "pytorch_lightning.strategies")


class _RegisterBagua(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in _TARGETS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            try:
                import lightning_bagua  # noqa: F401  (registers "bagua")
            except Exception:  # pragma: no cover - never break Lightning
                pass

        spec.loader.exec_module = exec_module
        return spec


def install():
    try:
        if not any(isinstance(f, _RegisterBagua) for f in sys.meta_path):
            sys.meta_path.insert(0, _RegisterBagua())
    except Exception:  # pragma: no cover
        pass


install()
