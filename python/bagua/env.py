"""Where the shipped NCCL plugin is."""
import os


def net_plugin_path():
    """Path of libnccl-net-bagua.so inside this package, or None if absent."""
    path = os.path.join(os.path.dirname(__file__), "lib", "libnccl-net-bagua.so")
    return path if os.path.exists(path) else None
