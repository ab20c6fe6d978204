"""The nccl-tests sections of the GPU report (bench/gpu/summarize.py):
busbw tables per collective, the configuration grid, latency, the issue's
targets, rate-limited runs and the two-process MPI runs. A mixin of
summarize.Report, which provides self.w, self.nt, self.runs, self.debug and
the best socket configurations.
"""

import re

from gpu_runs import (LARGE, OTHER_COLLS, RATE_FROM, SMALL_MAX, cell, human, is_rep,
                      large_score, med, per_size, ratio, why_missing)


class NcclTestsSections:

    def coll_table(self, coll, best_cfg):
        """busbw per size: Bagua (and bagua_tuned if run), socket defaults, best
        socket, and for all_reduce the envelope (per-size max over socket configs)."""
        socket_cfgs = sorted(c for (cl, c) in self.nt if cl == coll and c.startswith("socket_"))
        cols = [("Bagua", "bagua")]
        if self.runs(coll, "bagua_tuned"):
            cols.append(("Bagua tuned", "bagua_tuned"))
        cols.append(("socket default", "socket_default"))
        if best_cfg:
            cols.append((f"best socket ({best_cfg})", best_cfg))
        runs = {cfg: self.runs(coll, cfg) for _, cfg in cols}
        vals = {cfg: per_size(runs[cfg], 2) for _, cfg in cols}
        env = {}
        if coll == "all_reduce" and len(socket_cfgs) > 2:
            for c in socket_cfgs:
                for sz, v in per_size(self.runs(coll, c), 2).items():
                    env[sz] = max(env.get(sz, 0.0), med(v))
        ratios = [("Bagua/default", "bagua", "socket_default")]
        if best_cfg:
            ratios.append(("Bagua/best", "bagua", best_cfg))
            if "bagua_tuned" in runs:
                ratios.append(("Bagua tuned/best", "bagua_tuned", best_cfg))
        head = ["size"] + [c[0] for c in cols] + (["socket envelope"] if env else []) \
            + [r[0] for r in ratios] + (["Bagua/envelope"] if env else [])
        self.w("| " + " | ".join(head) + " |")
        self.w("|" + "---|" * len(head))
        sizes = sorted(set().union(*[set(v) for v in vals.values()]))
        if not sizes:
            cells = [why_missing(runs[cfg]) for _, cfg in cols]
            pad = " |" * (len(head) - 1 - len(cells))
            self.w("| (no rows) | " + " | ".join(cells) + " |" + pad)
            return
        for sz in sizes:
            m = {cfg: med(vals[cfg].get(sz, [])) for _, cfg in cols}
            row = [human(sz)] + [cell(vals[cfg].get(sz), runs[cfg], bool(vals[cfg]))
                                 for _, cfg in cols]
            if env:
                row.append(f"{env[sz]:.2f}" if sz in env else "-")
            row += [ratio(m[a], m[b]) for _, a, b in ratios]
            if env:
                row.append(ratio(m["bagua"], env.get(sz)))
            self.w("| " + " | ".join(row) + " |")

    def allreduce(self):
        self.w("## all_reduce (nccl-tests `-g 2`, one process, two communicators)")
        self.w()
        reps = sorted({t for runs in self.nt.values() for t in runs if is_rep(t)})
        self.w(f"Interleaved repetitions found: {', '.join(reps) or 'none'}. Best socket "
               f"configuration by median mean busbw at >= 64 MiB: "
               f"{self.best or 'none parsed'}"
               + (f" ({self.best_score:.2f} GB/s)." if self.best_score is not None else "."))
        self.w()
        self.coll_table("all_reduce", self.best)
        self.w()
        self.tuned_grid()
        self.latency()
        self.targets()

    def tuned_grid(self):
        cfgs = sorted(c for (cl, c) in self.nt if cl == "all_reduce")
        if not cfgs:
            return
        picks = [2 << 20, 16 << 20, 128 << 20, 1 << 30]
        self.w("Every all_reduce configuration (busbw, median over repetitions):")
        self.w()
        self.w("| config | mean >= 64 MiB | " + " | ".join(human(p) for p in picks) + " | runs |")
        self.w("|---|---|" + "---|" * len(picks) + "---|")
        for c in cfgs:
            runs = self.runs("all_reduce", c)
            vals = per_size(runs, 2)
            sc = large_score(runs)
            cells = [f"{med(vals[p]):.2f}" if p in vals else "-" for p in picks]
            states = ", ".join(f"{t}:{r.state()}" for t, r in sorted(runs.items()) if is_rep(t))
            self.w(f"| {c} | {'-' if sc is None else f'{sc:.2f}'} | " + " | ".join(cells)
                   + f" | {states or 'none'} |")
        self.w()

    def latency(self):
        bag = self.runs("all_reduce", "bagua")
        dflt = self.runs("all_reduce", "socket_default")
        best = self.runs("all_reduce", self.best) if self.best else {}
        bt, dt, tt = per_size(bag, 0), per_size(dflt, 0), per_size(best, 0)
        sizes = sorted(s for s in set(bt) | set(dt) if s <= SMALL_MAX)
        self.w("all_reduce latency, 8 B to 1 MiB (time in us, out-of-place; lower is better):")
        self.w()
        self.w("| size | Bagua | socket default | best socket | Bagua/default | Bagua/best |")
        self.w("|---|---|---|---|---|---|")
        if not sizes:
            self.w(f"| (no rows) | {why_missing(bag)} | {why_missing(dflt)} | | | |")
        for s in sizes:
            b, d, t = med(bt.get(s, [])), med(dt.get(s, [])), med(tt.get(s, []))
            self.w(f"| {human(s)} | {cell(bt.get(s), bag, bool(bt), 1)} | "
                   f"{cell(dt.get(s), dflt, bool(dt), 1)} | {cell(tt.get(s), best, bool(tt), 1)} | "
                   f"{ratio(b, d)} | {ratio(b, t)} |")
        self.w()

    def targets(self):
        self.w("### Issue 4 targets (from the medians above)")
        self.w()
        dflt = per_size(self.runs("all_reduce", "socket_default"), 2)
        best = per_size(self.runs("all_reduce", self.best), 2) if self.best else {}
        dt = per_size(self.runs("all_reduce", "socket_default"), 0)
        for cfg in ("bagua", "bagua_tuned"):
            if not self.runs("all_reduce", cfg):
                continue
            bag = per_size(self.runs("all_reduce", cfg), 2)
            bt = per_size(self.runs("all_reduce", cfg), 0)
            large = [sz for sz in sorted(bag) if sz >= LARGE]
            n_best = sum(1 for sz in large if sz in best and med(bag[sz]) >= 1.5 * med(best[sz]))
            n_def = sum(1 for sz in large if sz in dflt and med(bag[sz]) >= 3 * med(dflt[sz]))
            cmp_best = sum(1 for sz in large if sz in best)
            cmp_def = sum(1 for sz in large if sz in dflt)
            small = [sz for sz in sorted(bt) if sz <= SMALL_MAX and sz in dt]
            n_lat = sum(1 for sz in small if med(bt[sz]) <= med(dt[sz]))
            self.w(f"- {cfg}, >= 64 MiB, busbw >= 1.5x best socket ({self.best}): "
                   f"{n_best} of {cmp_best} sizes compared.")
            self.w(f"- {cfg}, >= 64 MiB, busbw >= 3x socket defaults: "
                   f"{n_def} of {cmp_def} sizes compared.")
            self.w(f"- {cfg}, 8 B to 1 MiB, time <= socket defaults: "
                   f"{n_lat} of {len(small)} sizes compared.")
        self.w()

    def others(self):
        self.w("## Other collectives (one interleaved run each: Bagua, socket default, "
               "best socket)")
        self.w()
        self.w(f"The best socket configuration here is the one picked after all_reduce "
               f"repetition 1: {self.best_run or 'none'}.")
        self.w()
        for coll in OTHER_COLLS:
            self.w(f"### {coll}")
            self.w()
            self.coll_table(coll, self.best_run)
            self.w()

    def rate_limits(self):
        runs = self.runs("all_reduce", "bagua")
        rl = {t: r for t, r in runs.items() if re.fullmatch(r"rl\d+", t)}
        self.w("## Rate-limited Bagua (BAGUA_NET_RATE_LIMIT_MBPS)")
        self.w()
        if not rl:
            self.w("No rate-limit runs in the logs (not run, or the plugin lacks the knob).")
            self.w()
            return
        for tag, run in sorted(rl.items(), key=lambda kv: int(kv[0][2:])):
            mbps = int(tag[2:])
            lim = mbps / 8000.0  # GB/s
            d = self.debug(run.path)
            self.w(f"### {mbps} Mbit/s = {lim:.3f} GB/s ({run.state()})")
            self.w()
            if d.plugin_lines:
                self.w("Plugin lines seen: " + "; ".join(f"`{x}`" for x in d.plugin_lines[:3]))
                self.w()
            rows = [r for r in run.rows if r.size >= RATE_FROM]
            if not rows:
                self.w(f"No rows >= 16 MiB ({run.state()}).")
                self.w()
                continue
            self.w("| size | busbw | % of limit | >= 90% |")
            self.w("|---|---|---|---|")
            for r in rows:
                pct = 100.0 * r.oop[2] / lim
                self.w(f"| {human(r.size)} | {r.oop[2]:.3f} | {pct:.1f}% | "
                       f"{'yes' if pct >= 90 else 'no'} |")
            self.w()

    def mpi(self):
        found = [(k, runs) for k, runs in self.nt.items()
                 if any(t.startswith("mpi") for t in runs)]
        if not found:
            return
        self.w("## Two processes (MPI build, `mpirun -np 2`)")
        self.w()
        self.w("| run | state | mean busbw >= 64 MiB | Using network |")
        self.w("|---|---|---|---|")
        for (coll, cfg), runs in sorted(found):
            for tag, run in sorted(runs.items()):
                if not tag.startswith("mpi"):
                    continue
                vals = [r.oop[2] for r in run.rows if r.size >= LARGE]
                mean = f"{sum(vals) / len(vals):.2f}" if vals else "-"
                nets = ", ".join(self.debug(run.path).using_network) or "-"
                self.w(f"| {coll} {cfg} {tag} | {run.state()} | {mean} | {nets} |")
        self.w()
