"""bagua.distributed: the model wrapper and the launchers.

- `BaguaDistributedDataParallel` (alias `DistributedDataParallel`) and
  `with_bagua`: see `_ddp.py`. They are loaded on first use, so the launchers
  below start without importing torch's model code or the compiled `bagua._C`.
- `python -m bagua.distributed.launch`: the original's static launcher, over
  torchrun (`launch.py`).
- `python -m bagua.distributed.run`: torchrun with Bagua's extra arguments
  (`run.py`).
See docs/launchers.md.
"""

__all__ = ["BaguaDistributedDataParallel", "DistributedDataParallel", "with_bagua"]


def __getattr__(name):
    if name in __all__:
        from . import _ddp

        return getattr(_ddp, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
