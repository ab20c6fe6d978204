"""Packaging: the console script and the Python sources meson installs."""
import os
import re

from launch_support import PKG_ROOT, REPO


def test_baguarun_console_script_registered():
    import tomllib

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["scripts"]["baguarun"] == "bagua.script.baguarun:main"


def test_meson_installs_every_python_source():
    # python/meson.build lists each package's sources by name in one table.
    with open(os.path.join(PKG_ROOT, "meson.build")) as f:
        text = f.read()
    table = text[text.index("python_packages = {"):text.index("\n}\n")]
    installed = set()
    for package, files in re.findall(r"'([^']+)': \[([^\]]*)\]", table):
        installed.update(f"{package}/{name}" for name in re.findall(r"'([^']+)'", files))
    sources = set()
    for package in ("bagua", "lightning_bagua"):
        for root, _, names in os.walk(os.path.join(PKG_ROOT, package)):
            sources.update(os.path.relpath(os.path.join(root, n), PKG_ROOT)
                           for n in names if n.endswith(".py"))
    assert sources - installed == set(), "not installed by python/meson.build"
