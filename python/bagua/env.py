"""Where the shipped NCCL plugin is."""
import os

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
