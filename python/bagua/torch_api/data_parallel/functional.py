"""bagua.torch_api.data_parallel.functional: all_reduce inside autograd
(the original's): the forward returns the reduction of every rank's tensor,
the backward reduces the incoming gradient the same way."""
import torch
import torch.distributed as dist

from ..collectives import ReduceOp, _reduce_op
from ..communication import allreduce_inplace
from .distributed import to_bagua_process_group

__all__ = ["ReduceOp", "all_reduce", "torch_reduce_op_to_bagua"]


def torch_reduce_op_to_bagua(op):
    """bagua's ReduceOp for a torch.distributed.ReduceOp (or one of ours)."""
    return _reduce_op(op)


def _bagua_group(group):
    """Our process group for a torch one; None or torch's default group: ours."""
    if group is None or group is dist.GroupMember.WORLD:
        return to_bagua_process_group(None)
    if dist.is_initialized() and group is dist.group.WORLD:
        return to_bagua_process_group(None)
    return to_bagua_process_group(group)


def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None):
    """A new tensor holding the reduction (`op`, torch's or bagua's) of
    `tensor` over the ranks of `group` (a torch or Bagua process group;
    default: the whole job), bitwise identical on every rank; gradients flow
    back through the same reduction."""
    return _AllReduce.apply(torch_reduce_op_to_bagua(op), _bagua_group(group), tensor)


class _AllReduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.op, ctx.group = op, group
        out = tensor.clone()
        allreduce_inplace(out, op, group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad_output.contiguous())
