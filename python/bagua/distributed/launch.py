r"""``python -m bagua.distributed.launch``: the original Bagua launcher's command
line, run by torchrun (torch.distributed.run) in this process.

    python -m bagua.distributed.launch --nproc_per_node=K [--nnodes=N --node_rank=R
        --master_addr=A --master_port=P] [--enable_bagua_net] train.py [args...]

is torchrun with static rendezvous:

    torchrun --nnodes=N --node-rank=R --nproc-per-node=K --master-addr=A
        --master-port=P --rdzv-backend=static train.py [args...]

so the workers get torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, ...; OMP_NUM_THREADS=1
unless set), and, as the original gave them, NODE_RANK and
BAGUA_DEFAULT_BUCKET_SIZE. ``--enable_bagua_net`` sets NCCL_NET_PLUGIN to the
plugin shipped in this package and NCCL_NET=Bagua. ``--set_additional_flag``
passes ``--local_rank=<LOCAL_RANK>`` to the script, as the original did
(through bagua.distributed._with_local_rank). ``--logdir D`` becomes
torchrun's ``--log-dir D --redirects 3`` (files under torchrun's layout).
``--autotune_level N`` (N > 0) sets BAGUA_AUTOTUNE=N: the workers' engines
tune themselves unless the script passes ``autotune=``. The other autotune
and metrics arguments, and ``--host_list``/``--ssh_port`` (which the
original accepted and never used), are accepted and ignored with a warning.
The exit status is 0, or the first failed worker's. See docs/launchers.md.
"""
import os
import sys
from argparse import REMAINDER, ArgumentParser

from ._launcher import add_bagua_arguments, run_torchrun, warn_ignored, worker_env

PROG = "bagua.distributed.launch"

# Accepted and ignored, besides the service's (see _launcher.IGNORED_DEFAULTS).
_LAUNCH_IGNORED = (("host_list", None), ("ssh_port", None))


def get_args_parser():
    """The original launcher's arguments, names and defaults."""
    parser = ArgumentParser(
        prog=f"python -m {PROG}",
        description="Bagua's launcher (the original's command line) over torchrun: spawns "
        "--nproc_per_node workers on this node, with static rendezvous at "
        "--master_addr:--master_port. See docs/launchers.md.")
    parser.add_argument("--nnodes", type=int, default=1,
                        help="The number of nodes to use for distributed training.")
    parser.add_argument("--node_rank", type=int, default=0,
                        help="The rank of the node for multi-node distributed training.")
    parser.add_argument("--nproc_per_node", type=int, default=1,
                        help="The number of processes to launch on each node; for GPU training, "
                        "the number of GPUs of the node.")
    parser.add_argument("--master_addr", default="127.0.0.1", type=str,
                        help="Master node (rank 0)'s address: the IP address or the hostname of "
                        "node 0; 127.0.0.1 for single node multi-proc training.")
    parser.add_argument("--master_port", default=29500, type=int,
                        help="A free port on the master node (rank 0), used for communication "
                        "during distributed training.")
    parser.add_argument("--set_additional_flag", default=False, action="store_true",
                        help="Pass --local_rank=<LOCAL_RANK> as an argument to the script.")
    parser.add_argument("-m", "--module", default=False, action="store_true",
                        help="Interpret training_script as a Python module, executed with the "
                        "same behavior as 'python -m'.")
    parser.add_argument("--no_python", default=False, action="store_true",
                        help='Do not prepend the training script with "python": exec it '
                        "directly. Useful when the script is not a Python script.")
    parser.add_argument("--logdir", default=None, type=str,
                        help="Directory for the workers' stdout and stderr files (torchrun's "
                        "--log-dir with --redirects 3: <logdir>/<run id>/attempt_0/<local "
                        "rank>/{stdout,stderr}.log).")
    add_bagua_arguments(parser)
    parser.add_argument("--host_list", type=str, help="Ignored (used by baguarun).")
    parser.add_argument("--ssh_port", type=int, help="Ignored (used by baguarun).")
    parser.add_argument("training_script", type=str,
                        help="The training program/script to be launched in parallel, followed "
                        "by all the arguments for the training script.")
    parser.add_argument("training_script_args", nargs=REMAINDER)
    return parser


def torchrun_argv(args):
    """torchrun's command line for parsed launcher arguments."""
    argv = [
        f"--nnodes={args.nnodes}",
        f"--node-rank={args.node_rank}",
        f"--nproc-per-node={args.nproc_per_node}",
        f"--master-addr={args.master_addr}",
        f"--master-port={args.master_port}",
        "--rdzv-backend=static",
    ]
    if args.logdir:
        argv += [f"--log-dir={args.logdir}", "--redirects=3"]
    if args.set_additional_flag:
        # torchrun can pass only --local-rank (dashed); the original passed
        # --local_rank, which scripts parse. The shim appends it.
        argv += ["--module", "bagua.distributed._with_local_rank"]
        if args.module:
            argv.append("-m")
        elif args.no_python:
            argv.append("--exec")
    else:
        if args.module:
            argv.append("--module")
        if args.no_python:
            argv.append("--no-python")
    return argv + [args.training_script] + list(args.training_script_args)


def main(argv=None):
    """Runs the launcher; returns its exit status."""
    parser = get_args_parser()
    args = parser.parse_args(argv)
    if args.module and args.no_python:
        parser.error("--no_python and --module cannot be used together")
    if args.nnodes < 1 or args.nproc_per_node < 1:
        parser.error("--nnodes and --nproc_per_node must be at least 1")
    if not 0 <= args.node_rank < args.nnodes:
        parser.error(f"--node_rank must be in [0, {args.nnodes}), got {args.node_rank}")
    warn_ignored(args, PROG, extra=_LAUNCH_IGNORED)
    env = worker_env(args, PROG)
    env["NODE_RANK"] = str(args.node_rank)  # the original set it; torchrun sets GROUP_RANK

    from torch.distributed import run as torchrun

    torch_args = torchrun.parse_args(torchrun_argv(args))
    os.environ.update(env)  # torchrun's workers inherit this process's environment
    return run_torchrun(torch_args, PROG)


if __name__ == "__main__":
    sys.exit(main())
