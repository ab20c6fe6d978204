"""bagua.torch_api.utils: the original's tensor helpers, for custom
algorithms and scripts that imported them (flatten a list of tensors into
one buffer, call a collective on it, copy the result back)."""
import logging
from collections import OrderedDict

import torch
import torch.distributed as dist

LOGGER = logging.getLogger(__name__)

__all__ = ["LOGGER", "flatten", "unflatten", "apply_flattened_call", "apply_flattened_call_all",
           "check_contiguous", "get_flattened_tensor", "to_bagua_datatype"]


def flatten(tensors):
    """One 1-D tensor holding `tensors` one after another (same dtype and device)."""
    return torch._utils._flatten_dense_tensors(tensors)


def unflatten(flat, tensors):
    """Views of `flat` shaped as `tensors` (the inverse of flatten)."""
    return torch._utils._unflatten_dense_tensors(flat, tensors)


def apply_flattened_call(bucket, call, extra_args=None):
    """call(flat, *extra_args) on the tensors of `bucket` flattened into one,
    then the result copied back into each. `call` torch.distributed.all_reduce
    averages (the sum divided by the world size), as the original did."""
    coalesced = flatten(bucket)
    call(coalesced, *(extra_args or ()))
    if call is dist.all_reduce:
        coalesced /= dist.get_world_size()
    for tensor, synced in zip(bucket, unflatten(coalesced, bucket)):
        tensor.copy_(synced)


def apply_flattened_call_all(tensors, call):
    """apply_flattened_call once per tensor type (dtype and device) of `tensors`."""
    groups = OrderedDict()
    for tensor in tensors:
        groups.setdefault(tensor.type(), []).append(tensor)
    for group in groups.values():
        apply_flattened_call(group, call)


def check_contiguous(tensors):
    """True when each tensor's data starts where the previous one's ends."""
    end = None
    for tensor in tensors:
        if end is not None and tensor.data_ptr() != end:
            return False
        end = tensor.data_ptr() + tensor.numel() * tensor.element_size()
    return True


def get_flattened_tensor(tensors):
    """A new 1-D tensor with the elements of `tensors` in order (None for an
    empty list)."""
    if len(tensors) == 0:
        return None
    return torch.cat([t.reshape(-1) for t in tensors]).to(tensors[0].dtype)


_BAGUA_DATATYPES = {torch.float32: "f32", torch.float16: "f16", torch.uint8: "u8",
                    torch.long: "i64"}


def to_bagua_datatype(datatype):
    """The original's name of a torch dtype: "f32", "f16", "u8" or "i64"."""
    if datatype not in _BAGUA_DATATYPES:
        raise ValueError(f"unsupported data type {datatype}.")
    return _BAGUA_DATATYPES[datatype]
