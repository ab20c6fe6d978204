"""Runs a training script with ``--local_rank=$LOCAL_RANK`` as its first argument.

    python -m bagua.distributed._with_local_rank SCRIPT [ARGS...]
    python -m bagua.distributed._with_local_rank -m MODULE [ARGS...]
    python -m bagua.distributed._with_local_rank --exec PROGRAM [ARGS...]

The original launcher's ``--set_additional_flag`` passed ``--local_rank=N``
(underscore) to the script; torchrun can pass only ``--local-rank=N``, so
bagua.distributed.launch runs this shim instead of the script. The script
then runs as ``python SCRIPT --local_rank=N ARGS`` would run it: in this
process, as ``__main__``, with ``sys.argv`` = [SCRIPT, --local_rank=N, ARGS...]
and the script's folder first on ``sys.path``; ``-m`` as ``python -m MODULE``;
``--exec`` replaces this process with PROGRAM (the launcher's --no_python).
"""
import os
import runpy
import sys

USAGE = "usage: python -m bagua.distributed._with_local_rank [-m | --exec] TARGET [ARGS...]"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    mode = "path"
    if argv and argv[0] in ("-m", "--exec"):
        mode = "module" if argv[0] == "-m" else "exec"
        argv = argv[1:]
    if not argv:
        raise SystemExit(USAGE)
    local_rank = os.environ.get("LOCAL_RANK")
    if local_rank is None:
        raise SystemExit("bagua.distributed._with_local_rank: LOCAL_RANK is not set (run it "
                         "under bagua.distributed.launch or torchrun)")
    target = argv[0]
    args = [f"--local_rank={local_rank}"] + argv[1:]
    if mode == "exec":
        sys.stdout.flush()
        sys.stderr.flush()
        os.execvp(target, [target] + args)
    sys.argv = [target] + args
    if mode == "module":
        # sys.path[0] is already the working directory, as for python -m.
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        # python SCRIPT puts the script's folder (symlinks resolved) first on sys.path.
        sys.path[0] = os.path.dirname(os.path.realpath(target))
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main()
