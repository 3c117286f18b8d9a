#!/usr/bin/python3
"""Plots of `straggler-scan compare` output (docs/compare.md).

Usage: scripts/plot_compare.py COMPARE.h5 DIR

Writes (DIR created if missing) and prints the path of:
  DIR/compare.png   left: the two waterfalls (docs/waterfall.md) part by part, good and bad bars
                    side by side; right: the largest kernel deltas (ms per rank per step, bad - good;
                    significant ones solid, the rest hatched), at most 15, names shortened.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scan_file  # noqa: E402  (opens and checks the scan; before h5py)

matplotlib = scan_file.setup_matplotlib()  # Agg; text is never mathtext
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

# Shared with plot_stragglers.py, beside it.
from plot_stragglers import save_png  # noqa: E402

MAX_KERNELS = 15


def text(v):
    """A string from the file, made printable (scan_file.text)."""
    return scan_file.text(v) if isinstance(v, bytes) else str(v)


def table(f, path):
    if path not in f:
        return {}
    g = f[path]
    return {k: g[k][()] for k in g.keys() if not k.endswith("_offsets")}


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, out_dir = argv[1], argv[2]
    # The output of `straggler-scan compare` (any straggler-scan output is read; a file breaking a
    # rule: one line, exit 2).
    with scan_file.open_scan(path, kind="any", reads=("/compare",)) as f:
        runs, wf, ks = table(f, "/compare/runs"), table(f, "/compare/waterfall"), table(f, "/compare/kernels")
    os.makedirs(out_dir, exist_ok=True)
    fig, (a, b) = plt.subplots(1, 2, figsize=(15, 6))
    if runs:
        names = [os.path.basename(text(p)) for p in runs["path"]]
        fig.suptitle(f"{names[0]} (good) vs {names[1]} (bad): step {runs['step_ms'][0]:.2f} -> {runs['step_ms'][1]:.2f} ms",
                     fontsize=10)
    if wf and len(wf["part"]):
        y = np.arange(len(wf["part"]))
        a.barh(y - 0.2, wf["good_ms"], height=0.4, label="good", color="#2ca02c")
        a.barh(y + 0.2, wf["bad_ms"], height=0.4, label="bad", color="#d62728")
        a.set_yticks(y)
        a.set_yticklabels([text(x)[:40] for x in wf["label"]], fontsize=8)
        a.invert_yaxis()
        a.set_xlabel("ms per step")
        a.legend(fontsize=8)
        a.set_title("where the step goes", fontsize=9)
    else:
        a.axis("off")
        a.text(0.5, 0.5, "no waterfall (no matched collectives?)", ha="center")
    if ks and len(ks["name"]):
        order = np.argsort(-np.abs(ks["delta_ms"]))[:MAX_KERNELS]
        y = np.arange(len(order))
        for i, k in enumerate(order):
            sig = bool(ks["significant"][k])
            b.barh(i, ks["delta_ms"][k], color="#d62728" if ks["delta_ms"][k] > 0 else "#1f77b4",
                   hatch=None if sig else "//", alpha=1.0 if sig else 0.4)
        b.set_yticks(y)
        b.set_yticklabels([f"{text(ks['name'][k])[:38]} ({text(ks['change'][k])})" for k in order], fontsize=7)
        b.invert_yaxis()
        b.axvline(0, color="black", lw=0.5)
        b.set_xlabel("delta ms per rank per step (bad - good); hatched: within the noise")
        b.set_title("largest kernel deltas", fontsize=9)
    else:
        b.axis("off")
        b.text(0.5, 0.5, "no kernels", ha="center")
    fig.tight_layout()
    save_png(fig, out_dir, "compare.png", dpi=100)  # prints its path
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
