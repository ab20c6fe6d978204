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


# Overrides the plugin's location (a plugin built outside the wheel, tests).
NET_PLUGIN_PATH_ENV = "BAGUA_NET_PLUGIN_PATH"


def packaged_net_plugin_path():
    """Where the wheel puts libnccl-net-bagua.so (whether or not it is there)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libnccl-net-bagua.so")


def net_plugin_path():
    """Absolute path of the Bagua-Net plugin, or None if there is none.

    $BAGUA_NET_PLUGIN_PATH, when set and not empty, names the plugin instead of
    the copy inside this package; None if that file does not exist.
    """
    path = os.environ.get(NET_PLUGIN_PATH_ENV) or packaged_net_plugin_path()
    path = os.path.abspath(path)
    return path if os.path.isfile(path) else None
