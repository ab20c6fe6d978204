"""Algorithm names and the location of the shipped NCCL plugin."""
import os

# The original's algorithm names (Algorithm.init registry), in its order.
KNOWN_ALGORITHMS = (
    "gradient_allreduce",
    "bytegrad",
    "decentralized",
    "low_precision_decentralized",
    "qadam",
    "async",
)


def implemented_algorithms():
    """The algorithm names this build implements."""
    from . import _C

    return tuple(_C.algorithms())


def check_algorithm(name):
    """Raises a clear error for names that are unknown or not built yet."""
    implemented = implemented_algorithms()
    if name in implemented:
        return name
    listed = ", ".join(implemented)
    if name in KNOWN_ALGORITHMS:
        raise NotImplementedError(
            f"algorithm {name!r} is one of Bagua's but is not implemented in this version; "
            f"implemented: {listed}"
        )
    raise ValueError(f"unknown algorithm {name!r}; implemented: {listed}")


def net_plugin_path():
    """Path of libnccl-net-bagua.so inside this package, or None if absent."""
    path = os.path.join(os.path.dirname(__file__), "lib", "libnccl-net-bagua.so")
    return path if os.path.exists(path) else None
