"""The runtime's algorithm registry (runtime/algorithms/registry.h), read
through the binding: the only list of algorithm names in the package. Each
entry: name, description, what it communicates, when, whether this version
builds it, and its options (name, default, type, one-line doc)."""
import functools


@functools.lru_cache(maxsize=None)
def entries():
    """Every entry, in the registry's order (Bagua's six first)."""
    from . import _C

    return tuple(_C.algorithm_registry())


def names():
    return tuple(e["name"] for e in entries())


def available():
    """Names of the algorithms this version builds."""
    return tuple(e["name"] for e in entries() if e["available"])


def entry(name):
    """The entry for `name`; ValueError for unknown names, listing the known."""
    for e in entries():
        if e["name"] == name:
            return e
    raise ValueError(f"unknown algorithm {name!r}; available: {', '.join(available())} "
                     f"(all of Bagua's: {', '.join(names())})")


def check_available(name):
    """Raises ValueError (unknown) or NotImplementedError (not built yet)."""
    e = entry(name)
    if not e["available"]:
        raise NotImplementedError(
            f"algorithm {name!r} is one of Bagua's but is not available in this version yet; "
            f"available: {', '.join(available())}")
    return e


def resolve_options(name, options):
    """`options` checked against the algorithm's schema, defaults filled in.
    Unknown option names and wrong types raise ValueError naming them."""
    from . import _C

    e = entry(name)
    schema = {o["name"]: o for o in e["options"]}
    for key, value in options.items():
        if key not in schema:
            raise ValueError(f"algorithm {name!r} has no option {key!r}; its options: "
                             f"{', '.join(schema) or 'none'}")
        if not isinstance(value, (bool, int, float, str)):
            raise ValueError(f"option {key!r} of algorithm {name!r} expects "
                             f"{schema[key]['type']}, got {type(value).__name__}")
    return dict(_C.check_algorithm_options(name, dict(options)))


def describe():
    """A table of the registry, for errors and `python -m bagua.info`."""
    lines = []
    for e in entries():
        opts = ", ".join(f"{o['name']}={o['default']!r}" for o in e["options"])
        state = "" if e["available"] else "  [not available yet]"
        lines.append(f"{e['name']:<28} {e['description']}{state}\n{'':<28} options: {opts}")
    return "\n".join(lines)
