"""The backend of Bagua's own algorithms: the runtime's Reducer (C++) over
the engine's communicator. It plans its buckets from the tensors (in the
order given, one dtype per bucket, padded to the algorithm's alignment),
checks every rank registered the same tensors, launches bucket k once its
tensors are ready and buckets 0..k-1 are launched, and is waited for once
per step; a watchdog turns a stuck bucket into a TimeoutError."""
import logging

import torch

from ..process_group import BaguaCommunicator, _default_store, _node_of_ranks

_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
_logger = logging.getLogger("bagua")


def hierarchy_of(ddp):
    """(intra-node communicator, inter-node one or None off the leaders,
    number of nodes) for the engine's group, or None where hierarchical
    communication is the flat one (every node holds one rank). Nodes must
    hold the same number of ranks. Made once per engine: bucket rebuilds
    (autotune, need_reset) reuse them; the engine releases them at close."""
    if "hierarchy" not in ddp._comms:
        ddp._comms["hierarchy"] = _make_hierarchy(ddp)
    return ddp._comms["hierarchy"]


def _make_hierarchy(ddp):
    nodes = _node_of_ranks()
    ranks = ddp.comm.ranks
    members = {}
    for r in ranks:
        members.setdefault(nodes[r], []).append(r)
    sizes = {len(v) for v in members.values()}
    if len(sizes) != 1:
        raise ValueError(f"bagua: hierarchical=True needs every node to hold the same number of "
                         f"ranks; this job's nodes hold {sorted(len(v) for v in members.values())}"
                         " (pass hierarchical=False)")
    if sizes == {1}:
        return None
    me = ranks[ddp.comm.rank()]
    mine = members[nodes[me]]
    intra = BaguaCommunicator(ddp.process_group, f"{ddp.comm.kind}/intra{nodes[me]}", mine)
    inter = None
    if me == mine[0]:
        leaders = [v[0] for v in members.values()]
        inter = BaguaCommunicator(ddp.process_group, f"{ddp.comm.kind}/inter", leaders)
    return intra, inter, len(members)


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
        self._store = _C.CallbackStore(_default_store())
        hierarchy = hierarchy_of(ddp) if options.get("hierarchical") else None
        extra = {}
        if hierarchy is not None:
            intra, inter, nodes = hierarchy
            extra = dict(intra=intra.backend(ddp.device), nodes=nodes,
                         inter=inter.backend(ddp.device) if inter is not None else None)
            _logger.info("bagua: %s runs hierarchically: %d nodes of %d ranks", algorithm,
                         nodes, intra.nranks())
        self.reducer = _C.Reducer(ddp.backend(), self._store, algorithm, specs,
                                  bucket_bytes=ddp.bucket_bytes, timeout_s=ddp.timeout_s,
                                  prefix=f"bagua/{ddp.comm.kind}/reducer{ddp._generation}",
                                  options=options,
                                  **extra)

    def mark_communication_ready(self, name):
        index = self._index[name]
        value = self._tensors[index].bagua_getter_closure()
        self.reducer.mark_ready(index, value.data_ptr())

    def mark_all_ready(self):
        """Every tensor is ready (at its registered data pointer)."""
        self.reducer.mark_all_ready()

    def wait_pending_comm_ops(self):
        self.reducer.wait()

    def save_element_state(self):
        """The algorithm's per-element state (ByteGrad's error-feedback
        residuals), per tensor, or None: what a rebuild carries over."""
        return self.reducer.save_element_state()

    def load_element_state(self, state):
        self.reducer.load_element_state(state)
