#!/usr/bin/python3
"""Findings x ranks heatmap of a straggler-scan HDF5 file (/findings: docs/hdf5-layout.md).

Usage: scripts/plot_findings.py OUT.h5 DIR

Writes DIR/findings_heatmap.png (DIR created if missing) and prints its path: one row per finding
(the Book of Root Causes, ranks/include/ranks/findings.hpp), one column per rank, the color the
finding's cost per step (ms); rows sorted by their largest cost, stragglers' columns marked.
A run without findings gives a note on the figure, not an error.
"""
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

FINDINGS = ["gpu_bubbles", "cpu_bottleneck", "nccl_serialization", "excessive_h2d", "small_kernels",
            "kernel_hotspot", "gc_pause", "comm_imbalance", "module_loading", "excessive_sync"]


def strings(ds):
    return [x.decode(errors="replace").rstrip("\0") if isinstance(x, bytes) else str(x) for x in ds[()]]


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    h5, out = argv[1], argv[2]
    with h5py.File(h5, "r") as f:
        if "/findings/rank" not in f:
            sys.stderr.write(f"plot_findings.py: {h5}: no /findings table (written by straggler-scan 0.1 with issue 10)\n")
            return 1
        rank = f["/findings/rank"][()]
        finding = strings(f["/findings/finding"])
        cost = f["/findings/cost_ms_per_step"][()]
        world = len(f["/ranks/rank"][()]) if "/ranks/rank" in f else (int(rank.max()) + 1 if len(rank) else 1)
        ranks = sorted(set(int(r) for r in f["/ranks/rank"][()])) if "/ranks/rank" in f else list(range(world))
        stragglers = set(int(r) for r in f["/stragglers/rank"][()]) if "/stragglers/rank" in f else set()
    rows = sorted(set(finding), key=lambda n: -max(c for c, m in zip(cost, finding) if m == n))
    col = {r: i for i, r in enumerate(ranks)}
    grid = np.zeros((max(len(rows), 1), max(len(ranks), 1)))
    for r, n, c in zip(rank, finding, cost):
        if int(r) in col:
            grid[rows.index(n), col[int(r)]] = c
    os.makedirs(out, exist_ok=True)
    fig, ax = plt.subplots(figsize=(min(3 + 0.25 * len(ranks), 24), 1.5 + 0.45 * max(len(rows), 1)))
    if not rows:
        ax.text(0.5, 0.5, "no root-cause findings", ha="center", va="center", transform=ax.transAxes, color="0.4")
        ax.set_xticks([]), ax.set_yticks([])
    else:
        im = ax.imshow(np.ma.masked_equal(grid, 0), aspect="auto", cmap="magma_r", interpolation="nearest")
        fig.colorbar(im, ax=ax, label="cost (ms per step)")
        ax.set_yticks(range(len(rows)), rows)
        step = max(1, len(ranks) // 32)
        ax.set_xticks(range(0, len(ranks), step), [str(r) for r in ranks[::step]], rotation=90 if len(ranks) > 16 else 0)
        for r in stragglers & set(col):
            ax.axvline(col[r], color="tab:blue", lw=1, alpha=0.6)
    ax.set_xlabel("rank" + (" (blue lines: stragglers)" if stragglers else ""))
    ax.set_title("root-cause findings: cost per step by rank")
    fig.tight_layout()
    path = os.path.join(out, "findings_heatmap.png")
    fig.savefig(path, dpi=110)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
