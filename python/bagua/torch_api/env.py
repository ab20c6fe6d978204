"""Where this process sits in the job, read from the launcher's environment
(torchrun, `python -m bagua.distributed.launch`, or `init_process_group`'s
arguments), with the original's function names and defaults."""
import os


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
