"""The runtime's NCCL is torch's: libbagua binds NCCL at run time to the
library already loaded in the process (runtime/nccl/nccl_api.h), which after
`import torch` is torch's. `check()` makes sure, before a CUDA communicator
is made, that the NCCL bound is the version torch reports, so a process
never runs two NCCLs."""
import torch


def _version_tuple(code):
    # NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
    return (code // 10000, code // 100 % 100, code % 100)


def torch_nccl_version():
    """torch's NCCL as (major, minor, patch), or None if torch has none."""
    try:
        return tuple(torch.cuda.nccl.version())
    except Exception:  # CPU-only torch
        return None


def check():
    """{path, version, source} of the NCCL bound; RuntimeError if it is not
    torch's (or none was found), naming both and the fix."""
    from . import _C

    if not _C.has_nccl():
        raise RuntimeError("bagua: this build has no CUDA path (it was built where no nvcc was "
                           "found); reinstall bagua on a machine with the CUDA toolkit")
    try:
        info = _C.nccl_library()
    except NotImplementedError as error:
        raise RuntimeError(f"bagua: {error}") from None
    ours = _version_tuple(info["version"])
    theirs = torch_nccl_version()
    if theirs is not None and ours != theirs:
        raise RuntimeError(
            f"bagua: the runtime bound NCCL {'.'.join(map(str, ours))} ({info['path']}, "
            f"{info['source']}) but torch uses NCCL {'.'.join(map(str, theirs))}: one process "
            "must not run two NCCLs. Unset BAGUA_NCCL_LIBRARY, or point it at torch's "
            "libnccl.so.2 (python -m bagua.info shows both)")
    return info
