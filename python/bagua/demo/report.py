"""The demo's comparison table and plot (accuracy against training time,
one line per algorithm)."""
import os


def table(data):
    """The comparison as text lines."""
    rows = [("algorithm", "wall time", "sent per rank", "steps/s", "final accuracy")]
    for r in data["results"]:
        if "error" in r:
            rows.append((r["algorithm"], "-", "-", "-", f"not run: {r['error']}"))
            continue
        rows.append((r["algorithm"], f"{r['wall_s']:.2f} s", _megabytes(r["bytes_sent"]),
                     f"{r['steps'] / r['wall_s']:.0f}" if r["wall_s"] > 0 else "-",
                     f"{r['accuracy']:.3f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:-1], widths[1:-1])]
        cells.append(row[-1] if n and "not run" in row[-1] else row[-1].rjust(widths[-1]))
        lines.append("  ".join(cells))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def _megabytes(n):
    return f"{n / 1e6:.2f} MB"


def plot(data, path, title):
    """Writes the PNG; returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    for r in data["results"]:
        if "error" in r:
            continue
        times, accs = zip(*r["curve"])
        ax.plot(times, accs, marker="o", markersize=3, label=r["algorithm"])
    ax.set_xlabel("training time (s, evaluation excluded)")
    ax.set_ylabel("held-out accuracy (rank 0's weights)")
    ax.set_title(title)
    ax.set_ylim(0.5, 1.0)  # the first points (about 0.1: chance) fall below
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
