"""What bagua.distributed.launch and bagua.distributed.run share.

Both are thin layers over torch.distributed.run (torchrun): they accept the
original Bagua launchers' extra arguments, turn the ones that still mean
something into environment variables for the workers, warn about the ones
that no longer do, and then run torchrun in this process. See
docs/launchers.md.
"""
import os
import sys

from .. import env as _env

# Arguments of the original launchers that belonged to its autotune service
# and metrics reporting. That feature is redesigned (autotuning in the training
# process, not a service started by the launcher): --autotune_level still
# turns it on (worker_env), the rest are accepted so that existing command
# lines still work, and named in one warning when set.
IGNORED_DEFAULTS = {
    "bagua_service_port": 29501,
    "is_output_autotune_log": False,
    "report_metrics": False,
    "autotune_max_samples": 60,
    "autotune_sampling_confidence_time": 5.0,
    "autotune_warmup_time": 30.0,
}

DEFAULT_BUCKET_SIZE = 10 * 1024**2


def add_bagua_arguments(parser):
    """Adds the original launchers' Bagua arguments (names and defaults)."""
    group = parser.add_argument_group("Bagua arguments")
    group.add_argument(
        "--enable_bagua_net", action="store_true", default=False,
        help="Use the Bagua-Net NCCL plugin shipped with this package: sets NCCL_NET_PLUGIN to "
        "its absolute path and NCCL_NET=Bagua (a plugin that fails to load is then an error, "
        "not a silent fallback). $BAGUA_NET_PLUGIN_PATH overrides the plugin's location.")
    group.add_argument(
        "--default_bucket_size", type=int, default=DEFAULT_BUCKET_SIZE,
        help="Default bucket size in bytes, passed to the workers as BAGUA_DEFAULT_BUCKET_SIZE "
        "(default: %(default)s).")
    group.add_argument(
        "--bagua_service_port", type=int, default=29501,
        help="Ignored (the original's autotune service port).")
    group.add_argument(
        "--autotune_level", type=int, default=0,
        help="Above 0: the workers' engines autotune their bucket size (or local SGD's and "
        "DiLoCo's sync_every) in process unless the script passes autotune= itself; passed as "
        "BAGUA_AUTOTUNE (default: %(default)s, off).")
    group.add_argument(
        "--is_output_autotune_log", action="store_true", default=False,
        help="Ignored (the original's autotune service).")
    group.add_argument(
        "--report_metrics", action="store_true", default=False,
        help="Ignored (the original's metrics reporting).")
    group.add_argument("--autotune_max_samples", type=int, default=60, help="Ignored.")
    group.add_argument("--autotune_sampling_confidence_time", type=float, default=5.0,
                       help="Ignored.")
    group.add_argument("--autotune_warmup_time", type=float, default=30.0, help="Ignored.")
    return group


def warn_ignored(args, prog, extra=()):
    """One warning on stderr naming every ignored argument given a non-default value.

    `extra`: more (name, default) pairs the caller ignores.
    """
    pairs = list(IGNORED_DEFAULTS.items()) + list(extra)
    names = [f"--{name}" for name, default in pairs if getattr(args, name, default) != default]
    if names:
        print(f"{prog}: warning: ignoring {', '.join(names)}: the autotune service, metrics "
              "reporting and their port are not part of this version's launchers "
              "(see docs/launchers.md)", file=sys.stderr, flush=True)
    return names


def _no_plugin_message():
    override = os.environ.get(_env.NET_PLUGIN_PATH_ENV)
    if override:
        return (f"--enable_bagua_net: no Bagua-Net plugin: {_env.NET_PLUGIN_PATH_ENV}={override} "
                "is not a file")
    return ("--enable_bagua_net: this bagua installation has no Bagua-Net plugin (no "
            f"{_env.packaged_net_plugin_path()}; the package was built without it, or is "
            "imported from a source tree). Install the wheel, which carries the plugin "
            f"(pip install .), or set {_env.NET_PLUGIN_PATH_ENV} to a libnccl-net-bagua.so.")


def worker_env(args, prog):
    """The environment variables the workers get on top of torchrun's.

    Exits with an error message when --enable_bagua_net is given and there is
    no plugin.
    """
    if args.default_bucket_size <= 0:
        raise SystemExit(f"{prog}: error: --default_bucket_size must be positive, got "
                         f"{args.default_bucket_size}")
    if args.autotune_level < 0:
        raise SystemExit(f"{prog}: error: --autotune_level must be 0 or more, got "
                         f"{args.autotune_level}")
    env = {"BAGUA_DEFAULT_BUCKET_SIZE": str(args.default_bucket_size)}
    if args.autotune_level > 0:
        env["BAGUA_AUTOTUNE"] = str(args.autotune_level)
    # torchrun's c10d rendezvous shares its TCP store with the workers by
    # default, and a restarted worker then reads the previous attempt's keys
    # (peer addresses, NCCL ids) from it and fails to connect or hangs
    # (pytorch/pytorch#135712, still so in torch 2.11): with this set, each
    # rendezvous round starts a fresh store. Read by the agent, in this process.
    env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = os.environ.get(
        "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")
    if args.enable_bagua_net:
        path = _env.net_plugin_path()
        if path is None:
            raise SystemExit(f"{prog}: error: {_no_plugin_message()}")
        env["NCCL_NET_PLUGIN"] = path
        env["NCCL_NET"] = "Bagua"
    return env


def strip_bagua_arguments(args):
    """Removes the Bagua arguments from a parsed namespace (torchrun's remain)."""
    for name in ["enable_bagua_net", "default_bucket_size", "autotune_level", *IGNORED_DEFAULTS]:
        if hasattr(args, name):
            delattr(args, name)
    return args


def _exit_code(error):
    _, failure = error.get_first_failure()
    code = failure.exitcode
    if code > 0:
        return code
    if code < 0:
        return 128 - code  # killed by signal -code: the shell's convention
    return 1


def run_torchrun(torch_args, prog):
    """Runs torchrun (torch.distributed.run.run) with a parsed namespace.

    Returns 0 when every worker succeeded, else the exit code of the first
    worker that failed (128 + N for a signal N), after printing torchrun's
    failure summary; 128 + N when this launcher got signal N.
    """
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, record

    try:
        # record(): writes the root cause to $TORCHELASTIC_ERROR_FILE when this
        # launcher itself runs under an elastic agent, as torchrun's main does.
        record(torchrun.run)(torch_args)
    except ChildFailedError as error:
        print(f"{prog}: a worker failed; torchrun's summary:{error}", file=sys.stderr, flush=True)
        return _exit_code(error)
    except SignalException as error:
        # torchrun has stopped the workers (SIGTERM, SIGHUP from a closed ssh
        # session, ...); no traceback, the shell's status for the signal.
        print(f"{prog}: stopped by {error.sigval.name}; workers stopped", file=sys.stderr,
              flush=True)
        return 128 + int(error.sigval)
    return 0
