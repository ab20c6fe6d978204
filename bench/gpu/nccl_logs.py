"""Parsers for the raw logs that bench/gpu/run_all.sh keeps: nccl-tests
tables, NCCL's INFO debug files, ddp_train.py / lightning_ddp.py output,
and run_all.sh's own steps.tsv, configs.tsv and env.txt.

Everything here only reads: a value that is not in a log stays None, so the
report can say "missing" instead of inventing a number.

Layout read (under RAW = OUT_DIR/raw):
  nt/<coll>__<config>__<tag>.log        nccl-tests stdout (tag r1, r2, smoke, rl10000, mpi_r1)
  nt/<coll>__<config>__<tag>.nccl.<pid>.log   NCCL_DEBUG_FILE output of that run
  ddp/<config>.log, ddp/<config>.rank<r>.json, ddp/<config>.nccl.<pid>.log
  lightning/<label>.log, lightning/<label>.nccl.<pid>.log
  steps.tsv, configs.tsv, best_socket.txt; OUT_DIR/env.txt
"""

import collections
import dataclasses
import glob
import json
import os
import re

# nccl-tests data line: size count type redop root, then for out-of-place and
# in-place: time algbw busbw #wrong (#wrong is "N/A" without -c 1).
_BODY = 4


@dataclasses.dataclass
class Row:
    size: int
    count: int
    dtype: str
    redop: str
    root: int
    oop: tuple  # (time_us, algbw, busbw, wrong or None)
    ip: tuple


@dataclasses.dataclass
class NtRun:
    path: str
    coll: str
    config: str
    tag: str
    rows: list = dataclasses.field(default_factory=list)
    avg_busbw: float = None
    out_of_bounds: int = None
    concluded: bool = False
    nt_version: str = None
    nccl_library: str = None
    skipped: str = None
    status: str = None  # from run_all.sh's "# finished: status=X rc=N" line
    rc: str = None
    errors: list = dataclasses.field(default_factory=list)

    def wrong_total(self):
        """Sum of #wrong over both placements, None if no row reported it."""
        vals = [w for r in self.rows for w in (r.oop[3], r.ip[3]) if w is not None]
        return int(sum(vals)) if vals else None

    def by_size(self):
        return {r.size: r for r in self.rows}

    def state(self):
        """One word for the report: ok, partial, failed, timeout, skipped, empty."""
        if self.skipped:
            return "skipped"
        if self.rows and self.concluded and self.status in (None, "ok"):
            return "ok"
        if self.rows:
            return "partial"
        if self.status in ("timeout", "failed"):
            return self.status
        return "empty"


def _num(tok):
    try:
        return float(tok)
    except ValueError:
        return None


def parse_row(line):
    """Returns a Row for an nccl-tests data line, else None."""
    t = line.split()
    if len(t) < 5 + 2 * _BODY:
        return None
    try:
        size, count, root = int(t[0]), int(t[1]), int(t[4])
    except ValueError:
        return None
    body = [_num(x) for x in t[5:5 + 2 * _BODY]]
    if any(v is None for i, v in enumerate(body) if i % _BODY != 3):
        return None
    return Row(size, count, t[2], t[3], root, tuple(body[:_BODY]), tuple(body[_BODY:]))


_ERR_RE = re.compile(r"(failure|failed|error|NCCL WARN|Segmentation|Aborted|Traceback)", re.I)


def parse_nccl_tests(path):
    """Parses one nccl-tests stdout log named <coll>__<config>__<tag>.log."""
    name = os.path.basename(path)[:-len(".log")]
    parts = name.split("__")
    coll, config, tag = (parts + ["?", "?", "?"])[:3]
    run = NtRun(path=path, coll=coll, config=config, tag=tag)
    with open(path, errors="replace") as f:
        for line in f:
            s = line.strip()
            if s.startswith("# SKIPPED"):
                run.skipped = s[2:]
            elif s.startswith("# finished:"):
                m = re.search(r"status=(\w+) rc=(\S+)", s)
                if m:
                    run.status, run.rc = m.group(1), m.group(2)
            elif s.startswith("#"):
                m = re.search(r"Avg bus bandwidth\s*:\s*(\S+)", s)
                if m:
                    run.avg_busbw = _num(m.group(1))
                m = re.search(r"Out of bounds values\s*:\s*(\d+)", s)
                if m:
                    run.out_of_bounds = int(m.group(1))
                if "Collective test concluded" in s:
                    run.concluded = True
                m = re.search(r"nccl-tests version (\S+).*nccl-library=(\d+)", s)
                if m:
                    run.nt_version, run.nccl_library = m.group(1), m.group(2)
            else:
                row = parse_row(s)
                if row is not None:
                    run.rows.append(row)
                elif _ERR_RE.search(s) and len(run.errors) < 5:
                    run.errors.append(s[:240])
    return run


def load_nt_runs(raw):
    """All nccl-tests runs under RAW/nt, keyed by (coll, config) -> {tag: NtRun}."""
    out = collections.defaultdict(dict)
    for path in sorted(glob.glob(os.path.join(raw, "nt", "*.log"))):
        if ".nccl." in os.path.basename(path):
            continue
        run = parse_nccl_tests(path)
        out[(run.coll, run.config)][run.tag] = run
    return out


@dataclasses.dataclass
class NcclDebug:
    files: int = 0
    versions: set = dataclasses.field(default_factory=set)
    plugins_loaded: set = dataclasses.field(default_factory=set)  # "Bagua (v11)"
    using_network: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    via: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    warns: list = dataclasses.field(default_factory=list)
    plugin_lines: list = dataclasses.field(default_factory=list)


_VIA_RE = re.compile(r"\bvia (NET/[A-Za-z0-9_\-]+|P2P|SHM|CollNet)")


def scan_nccl_debug(paths):
    """Summarises NCCL INFO/WARN files: version, plugin, network, channel transports."""
    d = NcclDebug(files=len(paths))
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                m = re.search(r"NCCL version (\S+)", line)
                if m:
                    d.versions.add(m.group(1))
                m = re.search(r"Loaded net plugin (.+?) \((v\d+)\)", line)
                if m:
                    d.plugins_loaded.add(f"{m.group(1)} ({m.group(2)})")
                m = re.search(r"Using network (.+?)\s*$", line)
                if m:
                    d.using_network[m.group(1)] += 1
                for m in _VIA_RE.finditer(line):
                    d.via[m.group(1)] += 1
                if "NCCL WARN" in line and len(d.warns) < 5:
                    d.warns.append(line.strip()[:240])
                if "NET/Bagua" in line and "Channel" not in line and len(d.plugin_lines) < 12:
                    d.plugin_lines.append(line.strip()[:240])
    return d


def nccl_debug_for(log_path):
    """Debug files written for the run whose stdout log is LOG_PATH."""
    base = log_path[:-len(".log")] if log_path.endswith(".log") else log_path
    return scan_nccl_debug(sorted(glob.glob(glob.escape(base) + ".nccl.*.log")))


_FIRST_ERR_RE = re.compile(r"^([\w.]*(Error|Exception)\b.*|.*NCCL WARN.*|.*Test NCCL failure.*)$")


def first_error(path):
    """First line of a log that names an error (for the report's "why" column)."""
    try:
        with open(path, errors="replace") as f:
            for line in f:
                s = line.strip()
                if not s.startswith("#") and _FIRST_ERR_RE.match(s):
                    return s[:200]
    except OSError:
        pass
    return None


def load_ddp(raw):
    """DDP runs: config -> {"ranks": {r: json}, "stdout": {...}, "log": path}."""
    out = {}
    for path in sorted(glob.glob(os.path.join(raw, "ddp", "*.log"))):
        if ".nccl." in os.path.basename(path):
            continue
        cfg = os.path.basename(path)[:-len(".log")]
        entry = {"log": path, "ranks": {}, "status": None, "rc": None, "skipped": None,
                 "stdout_losses": {}, "result_line": None}
        for jp in glob.glob(os.path.join(raw, "ddp", glob.escape(cfg) + ".rank*.json")):
            try:
                with open(jp) as f:
                    j = json.load(f)
                entry["ranks"][int(j["rank"])] = j
            except (OSError, ValueError, KeyError):
                pass
        with open(path, errors="replace") as f:
            for line in f:
                s = line.strip()
                m = re.match(r"DDP \S+ rank (\d+) step (\d+) loss \S+ hex (\S+)", s)
                if m:
                    entry["stdout_losses"][int(m.group(2))] = float.fromhex(m.group(3))
                elif s.startswith("DDP ") and " result " in s:
                    entry["result_line"] = s
                elif s.startswith("# SKIPPED"):
                    entry["skipped"] = s[2:]
                elif s.startswith("# finished:"):
                    m = re.search(r"status=(\w+) rc=(\S+)", s)
                    if m:
                        entry["status"], entry["rc"] = m.group(1), m.group(2)
        entry["error"] = first_error(path)
        out[cfg] = entry
    return out


def load_lightning(raw):
    """Lightning runs: label -> dict of parsed fields."""
    out = {}
    for path in sorted(glob.glob(os.path.join(raw, "lightning", "*.log"))):
        if ".nccl." in os.path.basename(path):
            continue
        label = os.path.basename(path)[:-len(".log")]
        e = {"log": path, "ranks": {}, "net_check": None, "status": None, "rc": None,
             "skipped": None}
        with open(path, errors="replace") as f:
            for line in f:
                s = line.strip()
                m = re.match(r"LIGHTNING \S+ rank (\d+) (.*)$", s)
                if m:
                    kv = m.group(2).split()
                    e["ranks"][int(m.group(1))] = dict(zip(kv[0::2], kv[1::2]))
                m = re.match(r"LIGHTNING \S+ net_check expect=(\S+) (OK|FAIL)", s)
                if m:
                    e["net_check"] = f"{m.group(2)} (expected {m.group(1)})"
                if s.startswith("# SKIPPED"):
                    e["skipped"] = s[2:]
                m = re.match(r"# finished: status=(\w+) rc=(\S+)", s)
                if m:
                    e["status"], e["rc"] = m.group(1), m.group(2)
        e["error"] = first_error(path)
        out[label] = e
    return out


def load_tsv(path, ncols):
    rows = []
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 2:
                    rows.append((parts + [""] * ncols)[:ncols])
    return rows


def load_env(path):
    """Leading "key: value" lines of env.txt (until the first '-----' line)."""
    env = collections.OrderedDict()
    if not os.path.exists(path):
        return env
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("-----"):
                break
            if line.startswith("#") or ":" not in line:
                continue
            k, v = line.split(":", 1)
            k, v = k.strip(), v.strip()
            env[k] = (env[k] + "; " + v) if k in env else v
    return env
