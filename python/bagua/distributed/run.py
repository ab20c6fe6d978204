r"""``python -m bagua.distributed.run``: torchrun (torch.distributed.run) with the
original Bagua elastic launcher's extra arguments.

Every torchrun argument is accepted as torchrun parses it (its own parser is
used: ``--nnodes=1:2 --rdzv-backend=c10d --rdzv-endpoint=host:port``,
``--standalone``, ``--max-restarts``, ...), with the original's defaults where
they differ from torchrun's (``--nproc-per-node auto``: a worker per GPU, per
CPU without one; ``--max-restarts 3``), plus:

- ``--enable_bagua_net``: NCCL_NET_PLUGIN = the plugin shipped in this
  package (absolute path), NCCL_NET=Bagua;
- ``--default_bucket_size BYTES``: BAGUA_DEFAULT_BUCKET_SIZE for the workers;
- ``--autotune_level N``: N > 0 sets BAGUA_AUTOTUNE=N, and the workers'
  engines tune themselves unless the script passes ``autotune=``;
- ``--bagua_service_port``, the other ``--autotune_*``,
  ``--is_output_autotune_log``, ``--report_metrics``: accepted and ignored,
  with one warning;
- ``--use_env``: accepted, no effect (the original's was always on: the local
  rank is in $LOCAL_RANK).

The Bagua arguments are removed, their environment set, and torchrun's run()
is called in this process. The exit status is 0, or the first failed
worker's. See docs/launchers.md.
"""
import argparse
import os
import sys

from ._launcher import (add_bagua_arguments, run_torchrun, strip_bagua_arguments, warn_ignored,
                        worker_env)

PROG = "bagua.distributed.run"

# bagua/distributed/run.py of Bagua 0.9: --nproc_per_node "auto", --max_restarts 3
# (torchrun's are "1" and 0).
ORIGINAL_DEFAULTS = {"nproc_per_node": "auto", "max_restarts": 3}


def get_args_parser():
    """torchrun's parser with Bagua's arguments added."""
    from torch.distributed import run as torchrun

    parser = torchrun.get_args_parser()
    parser.prog = f"python -m {PROG}"
    # The original's defaults where they differ from torchrun's: a worker per
    # GPU (per CPU without one) and 3 restarts. torchrun's parser already took
    # PET_NPROC_PER_NODE / PET_MAX_RESTARTS as defaults; those stay.
    for dest, default in ORIGINAL_DEFAULTS.items():
        if f"PET_{dest.upper()}" not in os.environ:
            parser.set_defaults(**{dest: default})
    parser.description = ("torchrun (torch.distributed.run) with Bagua's arguments: every "
                          "torchrun argument, plus the Bagua arguments below. See "
                          "docs/launchers.md.")
    add_bagua_arguments(parser)
    parser.add_argument("--use_env", "--use-env", action="store_true", default=True,
                        help=argparse.SUPPRESS)
    return parser


def main(argv=None):
    """Runs the launcher; returns its exit status."""
    args = get_args_parser().parse_args(argv)
    warn_ignored(args, PROG)
    env = worker_env(args, PROG)
    strip_bagua_arguments(args)
    del args.use_env  # torchrun would read use_env=False as "pass --local-rank"
    os.environ.update(env)  # torchrun's workers inherit this process's environment
    return run_torchrun(args, PROG)


if __name__ == "__main__":
    sys.exit(main())
