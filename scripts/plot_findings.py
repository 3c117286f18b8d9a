#!/usr/bin/python3
"""Findings x ranks heatmap of a straggler-scan HDF5 file (/findings: docs/hdf5-layout.md).

Usage: scripts/plot_findings.py OUT.h5 DIR

Writes DIR/findings_heatmap.png (DIR created if missing) and prints its path: one row per finding
(the Book of Root Causes, ranks/include/ranks/findings.hpp), the color the finding's cost per step
(ms); rows sorted by their largest cost. Left: one column per named rank (the stragglers and the 10
most blamed ranks, as "rank 261 (slow_gpu, node-32)"); right: one column per rank up to 64 ranks,
else per host (the largest cost among its ranks), the stragglers' columns in red. The PNG is at most
2,500 px on its longer side and lists the ranks it names in its tEXt chunk "straggler-scan:labelled".
A run without findings gives a note on the figure, not an error.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scan_file  # noqa: E402  (opens and checks the scan; before h5py)

matplotlib = scan_file.setup_matplotlib()  # Agg; text is never mathtext
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
import numpy as np  # noqa: E402

# Shared with plot_stragglers.py, beside it.
from plot_stragglers import Ranks, note, save_png, strings  # noqa: E402

FINDINGS = ["gpu_bubbles", "cpu_bottleneck", "nccl_serialization", "excessive_h2d", "small_kernels",
            "kernel_hotspot", "gc_pause", "comm_imbalance", "module_loading", "excessive_sync"]


def findings_grid(f, ranks):
    """(finding names, costliest first; ranks x findings cost matrix, rank r in row ranks.index(r))."""
    rank = f["/findings/rank"][()]
    finding = strings(f["/findings/finding"])
    cost = f["/findings/cost_ms_per_step"][()]
    rows = sorted(set(finding), key=lambda n: -max(c for c, m in zip(cost, finding) if m == n))
    row_of = {r: i for i, r in enumerate(ranks)}
    grid = np.zeros((len(ranks), len(rows)))
    for r, n, c in zip(rank, finding, cost):
        if int(r) in row_of:
            grid[row_of[int(r)], rows.index(n)] = c
    return rows, grid, row_of


def named_panel(ax, info, named, cells, show):
    """Findings x the named ranks, each cost also written in its cell."""
    ax.imshow(np.ma.masked_equal(cells, 0), **show)
    for (i, j), c in np.ndenumerate(cells):
        if c > 0:
            ax.text(j, i, f"{c:.1f}", ha="center", va="center", fontsize=7,
                    color="white" if show["norm"](c) > 0.5 else "black")
    info.named_ticks(ax, "x", named)


def draw(fig, info, rows, grid, row_of):
    """The panels and the color bar; returns the ranks named."""
    norm = Normalize(vmin=0, vmax=max(float(grid.max()), 1e-9))
    show = dict(aspect="auto", cmap="magma_r", interpolation="nearest", norm=norm)
    if info.all_named:  # a small run: one panel, every rank by name
        ax = fig.subplots()
        named_panel(ax, info, info.ranks, grid.T, show)
        ax.set_yticks(range(len(rows)), rows)
        ax.set_title("every rank, named (stragglers in red)", fontsize=9, loc="left")
        fig.colorbar(ax.images[0], ax=ax, label="cost (ms per step)", pad=0.01, fraction=0.03)
        return list(info.ranks)
    named = [r for r in info.labelled if r in row_of]
    groups = info.aggregate(grid, row_of, np.max).T  # findings x groups
    # Columns of the named panel are fixed-width; the other panel takes the rest.
    axes = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [max(len(named), 3), 28]})
    if named:
        named_panel(axes[0], info, named, grid[[row_of[r] for r in named]].T, show)
    else:
        note(axes[0], "no rank named")
    axes[0].set_yticks(range(len(rows)), rows)
    axes[0].set_title("named ranks", fontsize=9, loc="left")
    im = axes[1].imshow(np.ma.masked_invalid(np.ma.masked_equal(groups, 0)), **show)
    info.group_ticks(axes[1], "x")
    axes[1].set_xlabel("rank" if info.per_rank else f"{info.group_word()}: the largest cost among its ranks")
    axes[1].set_title(info.groups_phrase() + " (with a straggler: red)", fontsize=9, loc="left")
    fig.colorbar(im, ax=list(axes), label="cost (ms per step)", pad=0.01, fraction=0.03)
    return named


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    h5, out = argv[1], argv[2]
    with scan_file.open_scan(h5, reads=("/findings", "/ranks", "/stragglers")) as f:
        if "/findings/rank" not in f:
            sys.stderr.write(f"plot_findings.py: {scan_file.printable(os.fsencode(h5))}: no /findings table "
                             "(written by straggler-scan 0.1 with issue 10)\n")
            return 1
        info = Ranks(f)
        rows, grid, row_of = findings_grid(f, info.ranks)
    os.makedirs(out, exist_ok=True)
    fig = plt.figure(figsize=(13, 2.6 + 0.4 * max(len(rows), 1)), layout="constrained")
    named = []
    if not rows:
        ax = fig.subplots()
        note(ax, "no root-cause findings")
        ax.set_xticks([]), ax.set_yticks([])
    else:
        named = draw(fig, info, rows, grid, row_of)
    fig.suptitle("root-cause findings: cost per step by rank", fontsize=11)
    save_png(fig, out, "findings_heatmap.png", named)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
