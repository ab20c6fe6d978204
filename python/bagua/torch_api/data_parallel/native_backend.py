"""The backend of Bagua's own algorithms: the runtime's Reducer (C++) over
the engine's communicator. It plans its buckets from the tensors (in the
order given, one dtype per bucket, padded to the algorithm's alignment),
checks every rank registered the same tensors, launches bucket k once its
tensors are ready and buckets 0..k-1 are launched, and is waited for once
per step; a watchdog turns a stuck bucket into a TimeoutError."""
import logging
import warnings

import torch

from .. import env
from ..process_group import _default_store

_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
_logger = logging.getLogger("bagua")


class NativeBackend:
    def __init__(self, ddp, algorithm, options, tensors):
        from ... import _C

        self._ddp = ddp
        self._tensors = list(tensors)
        self._index = {t.bagua_tensor_name: i for i, t in enumerate(self._tensors)}
        specs = []
        for t in self._tensors:
            value = t.bagua_getter_closure()
            if value.dtype not in _DTYPES:
                raise ValueError(f"bagua: {t.bagua_tensor_name} has dtype {value.dtype}; "
                                 f"{algorithm} communicates {', '.join(map(str, _DTYPES))}")
            specs.append((t.bagua_tensor_name, value.data_ptr(), value.numel(),
                          _DTYPES[value.dtype]))
        self._warn_if_hierarchical(algorithm, options)
        self._store = _C.CallbackStore(_default_store())
        self.reducer = _C.Reducer(ddp.backend(), self._store, algorithm, specs,
                                  bucket_bytes=ddp.bucket_bytes, timeout_s=ddp.timeout_s,
                                  prefix=f"bagua/{ddp.comm.kind}/reducer", options=options)

    @staticmethod
    def _warn_if_hierarchical(algorithm, options):
        if options.get("hierarchical") and env.get_local_size() > 1 and \
                env.get_world_size() > env.get_local_size():
            warnings.warn(f"bagua: {algorithm}(hierarchical=True): hierarchical communication "
                          "is not built yet; this job runs the flat algorithm over all ranks",
                          stacklevel=4)

    def mark_communication_ready(self, name):
        index = self._index[name]
        value = self._tensors[index].bagua_getter_closure()
        self.reducer.mark_ready(index, value.data_ptr())

    def mark_all_ready(self):
        """Every tensor is ready (at its registered data pointer)."""
        self.reducer.mark_all_ready()

    def wait_pending_comm_ops(self):
        self.reducer.wait()
