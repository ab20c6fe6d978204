"""bagua.torch_api: the original Bagua API on today's PyTorch.

    import bagua.torch_api as bagua
    from bagua.torch_api.algorithms import bytegrad

    torch.cuda.set_device(bagua.get_local_rank())   # on GPUs
    bagua.init_process_group()
    model = model.with_bagua([optimizer], bytegrad.ByteGradAlgorithm())

Launch with `python -m bagua.distributed.launch --nproc_per_node N script.py`
or torchrun. See docs/migrating.md for what changed from Bagua 0.9.
"""
from . import distributed as _with_bagua  # noqa: F401  (installs Module.with_bagua)
from .distributed import BaguaModule  # noqa: F401
from .communication import (ReduceOp, allgather, allgather_inplace, allreduce,  # noqa: F401
                            allreduce_inplace, alltoall, alltoall_inplace, alltoall_v,
                            alltoall_v_inplace, barrier, broadcast, broadcast_object,
                            from_torch_group, gather, gather_inplace, init_process_group,
                            is_initialized, new_group, recv, reduce, reduce_inplace,
                            reduce_scatter, reduce_scatter_inplace, scatter, scatter_inplace, send)
from .env import (get_default_bucket_size, get_local_rank, get_local_size,  # noqa: F401
                  get_master_addr, get_node_rank, get_rank, get_world_size)
from .tensor import BaguaTensor  # noqa: F401
from . import algorithms, checkpoint, communication, contrib, data_parallel, utils  # noqa: F401,E402
