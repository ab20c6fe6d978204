"""Checking and stepping a large flat group in pieces, so that the GPU works
while the host checks.

With exact checks (check_flatten=True) the host looks at every parameter
and gradient before the kernel may read them: on 100,000 parameters that is
about 1-2 ms, and the GPU, its queue empty, waits for all of it before the
step's kernel starts. A flat group of at least two pieces of PIECE_PARAMS
parameters is therefore checked and launched piece by piece: the kernel of
piece k (the native one, or the optimizer's own step on the piece's flat
runs: the generic path) runs while the host checks piece k + 1, and the
step costs about one piece's check plus the kernels. The reads of
torch's fields (bagua._C.FlatWatch) run on helper threads started once per
step, block after block ahead of the pieces (begin_scan); the calling
thread takes each piece's result, repairs what changed and launches.

Atomicity: a piece's parameters are stepped only after that piece was
checked and repaired. A check that needs the layout rebuilt (a parameter
now of another shape, dtype or device) after earlier pieces stepped
rebuilds it and steps only the parameters not stepped yet: the step's
result is the same as if the whole group had been checked first.

BAGUA_FUSE_PIPELINE_PARAMS sets the piece size (default 25000; on CUDA
only, unless set: tests run the pieces on CPU with a small value; 0 turns
pieces off), BAGUA_FUSE_PIPELINE_FIRST the first piece's (default 5000;
0: as the others).
"""
import os

_ENV = os.environ.get("BAGUA_FUSE_PIPELINE_PARAMS")
PIECE_PARAMS = int(_ENV) if _ENV else 25000
# The first piece, smaller: the GPU waits for its whole check. On the H100
# (bench/results/fused_generic_pieces_gpu_2026-11-28), pieces of 25,000 after
# a first of 5,000 took Lion's exact step from 1.28x to 1.13x its step on
# one flat tensor (12,500, first 3,000 or not: 1.16-1.21x); AdamW's was
# 3.08 ms (2.93 with equal pieces in the run before: no gain measured).
FIRST_PIECE_PARAMS = int(os.environ.get("BAGUA_FUSE_PIPELINE_FIRST", "5000"))


def pieces(flat):
    """[begin, end) parameter ranges to check and step in turn, or None."""
    n = len(flat.params)
    if (not flat.exact or PIECE_PARAMS <= 0 or n < 2 * PIECE_PARAMS or
            (flat.device.type != "cuda" and not _ENV)):
        return None
    first = min(FIRST_PIECE_PARAMS or PIECE_PARAMS, PIECE_PARAMS)
    return [(0, first)] + [(a, min(n, a + PIECE_PARAMS)) for a in range(first, n, PIECE_PARAMS)]
