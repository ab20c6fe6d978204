"""Where this process sits in the job, read from the launcher's environment
(torchrun, `python -m bagua.distributed.launch`, or `init_process_group`'s
arguments), with the original's function names and defaults."""
import os
import socket


def number_from_env(name, default, kind=int, minimum=None):
    """$name as `kind` (int or float), `default` when unset; a value that is
    empty, malformed or below `minimum` is a ValueError naming the variable
    (int() and float() name only the text)."""
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise ValueError(f"bagua: ${name}={text!r} is not {what}") from None
    if minimum is not None and value < minimum:
        raise ValueError(f"bagua: ${name}={text!r} must be at least {minimum}")
    return value


def get_world_size() -> int:
    """Number of processes in the job (WORLD_SIZE, default 1)."""
    return int(os.environ.get("WORLD_SIZE", 1))


def get_rank() -> int:
    """This process's rank in the job (RANK, default 0)."""
    return int(os.environ.get("RANK", 0))


def get_local_rank() -> int:
    """This process's rank on its node (LOCAL_RANK, default 0)."""
    return int(os.environ.get("LOCAL_RANK", 0))


def get_local_size() -> int:
    """Number of processes on this node (LOCAL_WORLD_SIZE, default 1)."""
    return int(os.environ.get("LOCAL_WORLD_SIZE", 1))


def get_node_rank() -> int:
    """This node's rank among the nodes: torchrun's GROUP_RANK, else NODE_RANK,
    else derived from RANK and LOCAL_WORLD_SIZE."""
    for name in ("GROUP_RANK", "NODE_RANK"):
        if name in os.environ:
            return int(os.environ[name])
    return get_rank() // max(get_local_size(), 1)


def get_master_addr() -> str:
    return os.environ.get("MASTER_ADDR", "127.0.0.1")


def get_default_bucket_size() -> int:
    """Bucket size in bytes (BAGUA_DEFAULT_BUCKET_SIZE, default 10 MiB)."""
    return number_from_env("BAGUA_DEFAULT_BUCKET_SIZE", 10 * 1024**2, minimum=1)


def _is_elastic_launched():
    """True when torchrun's elastic agent (bagua.distributed.run) started this process."""
    return {"RANK", "GROUP_RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}.issubset(os.environ)


def get_bagua_service_port() -> int:
    """BAGUA_SERVICE_PORT, default -1 (the original's autotune service; this
    version starts no service, the value is only read back)."""
    return number_from_env("BAGUA_SERVICE_PORT", -1)


def is_report_metrics_switch_on() -> bool:
    """BAGUA_REPORT_METRICS == 1 (the original's metrics reporting; read back only)."""
    return number_from_env("BAGUA_REPORT_METRICS", 0) == 1


# Autotune: BAGUA_AUTOTUNE (set by the launchers' --autotune_level) above 0
# makes an engine built without an `autotune` argument tune itself, in
# process (data_parallel/autotune.py, docs/autotune.md). The other
# variables belonged to the original's service, whose search was timed in
# seconds and samples; they are read back with its defaults and configure
# nothing here (Autotune's arguments, counted in steps, do).

def get_autotune_level() -> int:
    """BAGUA_AUTOTUNE, default 0 (off); above 0, engines tune by default."""
    return number_from_env("BAGUA_AUTOTUNE", 0, minimum=0)


def get_autotune_max_samples() -> int:
    return number_from_env("BAGUA_AUTOTUNE_MAX_SAMPLES", 60)


def get_autotune_sampling_confidence_time_s() -> float:
    return number_from_env("BAGUA_AUTOTUNE_SAMPLING_CONFIDENCE_TIME_S", 5.0, kind=float)


def get_autotune_warmup_time_s() -> float:
    return number_from_env("BAGUA_AUTOTUNE_WARMUP_TIME_S", 30.0, kind=float)


def get_is_output_autotune_log() -> bool:
    return bool(number_from_env("BAGUA_IS_OUTPUT_AUTOTUNE_LOG", 0))


def get_autotune_server_wait_time() -> int:
    return number_from_env("BAGUA_AUTOTUNE_SERVER_WAIT_TIME", 300)


def find_free_network_port() -> int:
    """A TCP port free on this host now (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]
