#!/usr/bin/python3
"""Scaling plots of a straggler-scan HDF5 file (/scaling/rows: docs/scaling-cliffs.md).

Usage: scripts/plot_scaling.py OUT.h5 DIR

OUT.h5 is the output of `straggler-scan scaling` (rows across runs) or of a scan (one run's rows).
Writes (DIR created if missing) and prints the path of:
  DIR/scaling.png   per series (collective and message size, at most 8): transfer time (waiting
                    excluded) and bus bandwidth against group size, log2 axes; the model's
                    extrapolation from the smaller scales as a dashed line; each cliff marked
                    with a red cross and labelled with its cause and the boundary crossed.
A file without rows gives a note on the figure, not an error.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scan_file  # noqa: E402  (opens and checks the scan; before h5py)
import h5py  # noqa: E402

matplotlib = scan_file.setup_matplotlib()  # Agg; text is never mathtext
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

# Shared with plot_stragglers.py, beside it.
from plot_stragglers import save_png  # noqa: E402

MAX_SERIES = 8


def text(v):
    """A string from the file, made printable (scan_file.text)."""
    return scan_file.text(v) if isinstance(v, bytes) else str(v)


def read_rows(path):
    # A scan or the output of `straggler-scan scaling`: any straggler-scan output, checked.
    with scan_file.open_scan(path, kind="any", reads=("/scaling/rows",)) as f:
        if "/scaling/rows" not in f:
            return []
        g = f["/scaling/rows"]
        n = len(g["group_size"])
        # Scalar columns only (ragged ones, the hosts, are stored apart).
        cols = {k: g[k][()] for k in g.keys() if isinstance(g[k], h5py.Dataset) and g[k].shape == (n,)}
    rows = []
    for i in range(n):
        r = {k: v[i] for k, v in cols.items()}
        for k in ("series", "cause", "boundary", "collective", "run", "bound", "note"):
            if k in r:
                r[k] = text(r[k])
        rows.append(r)
    return rows


def by_series(rows):
    series = {}
    for r in rows:
        series.setdefault(r["series"], []).append(r)
    for s in series.values():
        s.sort(key=lambda r: int(r["group_size"]))
    # The series with a cliff first, then by their largest time.
    order = sorted(series, key=lambda k: (not any(bool(r["cliff"]) for r in series[k]), -max(r["time_ms"] for r in series[k])))
    return [(k, series[k]) for k in order[:MAX_SERIES]], max(0, len(series) - MAX_SERIES)


def label(r):
    words = r["cause"]
    if r.get("boundary"):
        words += "\n" + r["boundary"]
    return words


def panel(ax, rows, key, model_key, ylabel):
    x = np.array([int(r["group_size"]) for r in rows], dtype=float)
    y = np.array([float(r[key]) for r in rows])
    model = np.array([float(r[model_key]) for r in rows])
    ok = np.isfinite(y)
    if not ok.any():
        ax.text(0.5, 0.5, "unknown (no message sizes in the export)", ha="center", va="center", transform=ax.transAxes)
        ax.set_ylabel(ylabel)
        return
    ax.plot(x[ok], y[ok], "o-", color="tab:blue", label="measured")
    m = np.isfinite(model)
    if m.any():
        ax.plot(x[m], model[m], "--", color="tab:gray", label="model (no new boundary)")
    for r, xi, yi in zip(rows, x, y):
        if bool(r["cliff"]) and np.isfinite(yi):
            ax.plot([xi], [yi], "x", color="red", markersize=12, mew=3)
            ax.annotate(label(r), (xi, yi), textcoords="offset points", xytext=(-10, 8), ha="right", fontsize=8, color="red")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)


def plot(rows, out_dir):
    series, left_out = by_series(rows)
    n = max(1, len(series))
    # 2.6 in per series: 8 series stay under 2,500 px at 110 dpi.
    fig, axes = plt.subplots(n, 2, figsize=(12, 0.6 + 2.6 * n), squeeze=False)
    if not series:
        axes[0][0].text(0.5, 0.5, "no scaling rows in this file", ha="center", va="center")
        axes[0][0].axis("off"), axes[0][1].axis("off")
    for i, (name, rs) in enumerate(series):
        panel(axes[i][0], rs, "time_ms", "expected_ms", "transfer ms")
        panel(axes[i][1], rs, "busbw_gbps", "expected_gbps", "bus bandwidth GB/s")
        axes[i][0].set_title(name, loc="left", fontsize=10)
        if i == 0:
            axes[i][0].legend(fontsize=8, loc="upper left")
    for ax in axes[-1]:
        ax.set_xlabel("group size (ranks)")
    title = "collective scaling: time and bus bandwidth against the model"
    if left_out:
        title += f" ({left_out} more series not shown)"
    fig.suptitle(title)
    scan_file.math_ticks(fig)  # the log axes' own labels ($2^{3}$) stay mathtext
    fig.tight_layout()
    save_png(fig, out_dir, "scaling.png")  # prints its path


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    rows = read_rows(argv[1])  # a file breaking a rule: one line, exit 2
    os.makedirs(argv[2], exist_ok=True)
    plot(rows, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
