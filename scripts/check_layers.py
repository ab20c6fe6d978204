#!/usr/bin/env python3
"""Fails when a file of the plugin includes a header of a layer above its own.

The plugin's folders are layers, lowest first: nccl (NCCL's ABI, declared by
us), base, tuner, engine, transport, api, abi. A file may include headers of its own
layer and of the layers below it. Every `#include "net_plugin/LAYER/..."` of
every file under net_plugin/ is checked; a file outside a known layer folder,
or an include naming an unknown folder, is an error too, so a new folder must
be placed in the order here first.

Below the API layer nothing may reach the process's globals either: the
knobs as read from the environment (`params()`) and the process's plugin
state and connects (`processState()`, `processConnects()`). They are passed
down as arguments, so tests can build the objects of the lower layers with
other values in the same process. Only api/ (where NCCL's calls arrive with
no context) and the definition itself may name them.

Usage: check_layers.py [REPO_ROOT]   (default: the repository of this script)
Exit status 0 when every arrow points down, 1 otherwise (each offence named).
"""
import pathlib
import re
import sys
import tempfile

LAYERS = ["nccl", "base", "tuner", "engine", "transport", "api", "abi"]
RANK = {name: i for i, name in enumerate(LAYERS)}
INCLUDE = re.compile(r'^\s*#\s*include\s+"net_plugin/([^/"]+)/[^"]+"')
SOURCE_SUFFIXES = {".h", ".cc", ".def"}
# Process-wide accessors only the API layer may call.
GLOBALS = re.compile(
    r"(?<!Params& )(?<![\w:.>])(params|processState|processConnects|processEngine)\(\)")
GLOBALS_ALLOWED = {"api", "abi"}
GLOBALS_DEFINED_IN = {"base/params.cc", "base/params.h"}


def strip_comments(line):
    return line.split("//", 1)[0]


def check(root):
    plugin = root / "net_plugin"
    problems = []
    for path in sorted(plugin.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(plugin)
        layer = rel.parts[0] if len(rel.parts) > 1 else None
        if layer not in RANK:
            problems.append(f"net_plugin/{rel}: not inside a layer folder ({', '.join(LAYERS)})")
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            where = f"net_plugin/{rel}:{number}"
            match = INCLUDE.match(line)
            if match:
                target = match.group(1)
                if target not in RANK:
                    problems.append(f"{where}: includes unknown layer '{target}'")
                elif RANK[target] > RANK[layer]:
                    problems.append(
                        f"{where}: {layer}/ includes {target}/, a layer above it "
                        f"(order, lowest first: {' < '.join(LAYERS)})")
            code = strip_comments(line)
            found = GLOBALS.search(code)
            if found and layer not in GLOBALS_ALLOWED and str(rel) not in GLOBALS_DEFINED_IN:
                problems.append(
                    f"{where}: {layer}/ reads a process-wide global ({found.group(0)}); "
                    f"pass the values down from api/")
    return problems


def self_test():
    """The check must catch an upward include and accept a downward one."""
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp) / "net_plugin" / "base"
        base.mkdir(parents=True)
        (base / "up.h").write_text('#include "net_plugin/transport/comm.h"\n')
        (base / "down.h").write_text('#include "net_plugin/nccl/net_types.h"\n')
        (base / "global.cc").write_text("int n = params().streams;  // params() in a comment\n")
        (base / "passed.cc").write_text("int n = state.params().streams;\n")
        found = check(pathlib.Path(tmp))
        return (len(found) == 2 and "base/global.cc:1" in found[0]
                and "base/up.h:1" in found[1])


def main():
    if not self_test():
        print("check_layers.py: the self-test failed (the check itself is broken)")
        return 1
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent
    problems = check(root.resolve())
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} layering problem(s)")
        return 1
    print("every include of net_plugin/ points down: " + " < ".join(LAYERS) +
          "; only api/ reads the process's globals")
    return 0


if __name__ == "__main__":
    sys.exit(main())
