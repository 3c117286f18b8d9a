#!/usr/bin/python3
"""Plots of a straggler-scan HDF5 file (layout: docs/hdf5-layout.md).

Usage: scripts/plot_stragglers.py OUT.h5 DIR

Writes four PNG files into DIR (created if missing) and prints their paths:
  wait_heatmap.png   each rank's wait in matched collectives over time (ms per time bin)
  blame_per_rank.png peers' waiting time charged to the rank that started each chain (root blame, ms), stragglers labelled
  step_time.png      step time per iteration index, per rank and job median (ms)
  clock_offsets.png  clock offset per rank (ms), colored by host
Empty tables (no stragglers, no change points, no communicators) give a note, not an error.
"""
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import PowerNorm  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import numpy as np  # noqa: E402

MAX_BINS = 400
STRAGGLER_COLOR = "tab:red"


def strings(ds):
    """Fixed-length null-padded strings -> list of str."""
    return [x.decode(errors="replace").rstrip("\0") for x in ds[()]]


def read(f, path, default=None):
    return f[path][()] if path in f else default


def note(ax, text):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=11, color="0.4")


def save(fig, out_dir, name):
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    print(path)
    return path


def mark_rank_ticks(ax, axis, ranks, stragglers, max_ticks=48):
    """Tick every rank when few, else a subset plus every straggler; stragglers in red."""
    ranks = list(ranks)
    step = max(1, int(np.ceil(len(ranks) / max_ticks)))
    shown = sorted(set(ranks[::step]) | (set(stragglers) & set(ranks)))
    pos = [ranks.index(r) for r in shown]
    set_ticks = ax.set_yticks if axis == "y" else ax.set_xticks
    set_ticks(pos)
    labels = (ax.set_yticklabels if axis == "y" else ax.set_xticklabels)([str(r) for r in shown], fontsize=7)
    for lab, r in zip(labels, shown):
        if r in stragglers:
            lab.set_color(STRAGGLER_COLOR)
            lab.set_fontweight("bold")


def wait_matrix(f, ranks):
    """(rank x time bin) summed wait in ms, bin edges in s from the first op, ops per bin."""
    comms = "/collectives/communicators"
    if comms not in f or len(f[comms + "/size"]) == 0 or len(f["/collectives/arrival_ns"]) == 0:
        return None
    size = f[comms + "/size"][()].astype(np.int64)
    nops = f[comms + "/matched_ops"][()].astype(np.int64)
    arr_off = f[comms + "/arrival_offset"][()]
    mem_off = f[comms + "/member_offset"][()]
    op_off = f[comms + "/op_offset"][()]
    members = f["/collectives/members"][()]
    arrival = f["/collectives/arrival_ns"][()]
    first = f["/collectives/ops/first_arrival_ns"][()]
    row_of = {r: i for i, r in enumerate(ranks)}

    t0, t1 = first.min(), first.max()
    nbins = int(min(MAX_BINS, len(first)))
    edges = np.linspace(t0, t1 + 1, nbins + 1)
    waits = np.zeros((len(ranks), nbins))
    for c in range(len(size)):
        n, s = int(nops[c]), int(size[c])
        if n == 0 or s == 0:
            continue
        a = arrival[arr_off[c]:arr_off[c] + n * s].reshape(n, s)  # op x member, op-major
        w = (a.max(axis=1, keepdims=True) - a) / 1e6  # ms
        bins = np.clip(np.searchsorted(edges, first[op_off[c]:op_off[c] + n], side="right") - 1, 0, nbins - 1)
        for m, rank in enumerate(members[mem_off[c]:mem_off[c] + s]):
            if rank in row_of:
                np.add.at(waits[row_of[rank]], bins, w[:, m])
    return waits, (edges - t0) / 1e9, len(first)


def plot_wait_heatmap(f, out_dir, ranks, stragglers):
    fig, ax = plt.subplots(figsize=(12, max(4, 0.16 * len(ranks) + 2)))
    res = wait_matrix(f, ranks) if len(ranks) else None
    if res is None:
        note(ax, "no matched collectives (no NCCL communicators found)")
        ax.set_axis_off()
    else:
        waits, edges_s, nops = res
        # Square-root color scale: the rare long waits (pipeline bubbles) would hide a steady
        # straggler's few-ms-per-bin pattern on a linear scale.
        vmax = max(np.percentile(waits, 99.5), 1e-9)
        im = ax.imshow(waits, aspect="auto", interpolation="nearest", cmap="magma",
                       norm=PowerNorm(gamma=0.5, vmin=0, vmax=vmax),
                       extent=(edges_s[0], edges_s[-1], len(ranks) - 0.5, -0.5))
        cb = fig.colorbar(im, ax=ax, pad=0.01)
        cb.set_label("wait summed per bin (ms, sqrt scale)")
        mark_rank_ticks(ax, "y", ranks, stragglers)
        ax.set_xlabel(f"time since first collective (s, clock-corrected; {len(edges_s) - 1} bins, {nops} ops)")
        ax.set_ylabel("rank (stragglers in red)")
    ax.set_title("Wait in collectives (last arrival - own arrival) per rank over time")
    return save(fig, out_dir, "wait_heatmap.png")


def plot_blame(f, out_dir, ranks, stragglers):
    fig, ax = plt.subplots(figsize=(max(8, 0.25 * len(ranks) + 3), 4.5))
    # Root blame (charged to the rank that started each chain of waits); older files: direct blame.
    blame = read(f, "/ranks/root_blame_ms", None)
    if blame is None:
        blame = read(f, "/ranks/blame_ms", np.zeros(0))
    if len(ranks) == 0:
        note(ax, "no ranks")
    else:
        x = np.arange(len(ranks))
        colors = [STRAGGLER_COLOR if r in stragglers else "tab:blue" for r in ranks]
        ax.bar(x, blame, color=colors, width=0.8)
        ax.axhline(np.median(blame), color="0.4", ls="--", lw=1, label=f"median {np.median(blame):.1f} ms")
        for i, r in enumerate(ranks):
            if r in stragglers:
                ax.annotate(f"rank {r}: {stragglers[r] or 'straggler'}", (i, blame[i]), xytext=(0, 4),
                            textcoords="offset points", ha="center", va="bottom", fontsize=8,
                            color=STRAGGLER_COLOR, fontweight="bold")
        ax.set_ylim(0, max(blame.max(), 1.0) * 1.15)
        if not blame.any():
            note(ax, "no rank kept its peers waiting (no matched collectives?)")
        mark_rank_ticks(ax, "x", ranks, stragglers)
        ax.set_xlim(-0.6, len(ranks) - 0.4)
        ax.legend(loc="upper right", fontsize=8)
    ax.set_xlabel("rank")
    ax.set_ylabel("root blame (ms): peers' waits charged to the rank that started them")
    ax.set_title("Blame per rank: peers' time waiting for it in collectives (ms)"
                 + ("" if stragglers else "\nno stragglers found"))
    return save(fig, out_dir, "blame_per_rank.png")


def plot_step_time(f, out_dir, stragglers):
    fig, ax = plt.subplots(figsize=(10, 5))
    m = read(f, "/iterations/step_ms_matrix")
    cols = read(f, "/clock/rank", np.zeros(0, dtype=int))
    job = read(f, "/iterations/job_step_ms", np.zeros(0))
    if m is None or m.size == 0:
        note(ax, "no iterations found")
    else:
        m = np.where(m > 0, m, np.nan)  # 0 = the rank has no such iteration
        x = np.arange(m.shape[0])
        for k, r in enumerate(cols):
            if r in stragglers:
                ax.plot(x, m[:, k], color=STRAGGLER_COLOR, lw=1.2, label=f"rank {r} ({stragglers[r]})", zorder=3)
            else:
                ax.plot(x, m[:, k], color="0.6", lw=0.5, alpha=0.6, zorder=1)
        ax.plot([], [], color="0.6", lw=0.5, label="other ranks" if stragglers else "each rank")
        if len(job):
            ax.plot(np.arange(len(job)), job, color="black", lw=2.5, label="job (median over ranks)", zorder=4)
        # Change points are iteration numbers: index them through the first rank's numbering.
        numbers = read(f, "/iterations/number", np.zeros(0))
        it_rank = read(f, "/iterations/rank", np.zeros(0))
        first_rank = list(numbers[it_rank == it_rank[0]]) if len(it_rank) else []
        for j, cp in enumerate(read(f, "/iterations/change_points/iteration", np.zeros(0, dtype=int))):
            xi = first_rank.index(cp) if cp in first_rank else cp
            ax.axvline(xi, color="tab:orange", ls="--", lw=1.5, label="step time change" if j == 0 else None)
        steady = m[1:] if m.shape[0] > 1 else m
        if np.isfinite(steady).any():  # scale to the steady state; the warm-up may be far off
            lo, hi = np.nanmin(steady), np.nanmax(steady)
            pad = max(0.05 * (hi - lo), 0.01 * hi)
            ax.set_ylim(lo - pad, hi + pad)
        ax.set_xlim(-0.5, m.shape[0] - 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        warm = "warm-up"
        if m.shape[0] > 1 and np.nanmax(m[0]) > ax.get_ylim()[1]:
            warm += f" (up to {np.nanmax(m[0]):.0f} ms, off scale)"
        ax.axvspan(-0.5, 0.5, color="0.85", zorder=0, label=warm)
        ax.legend(loc="best", fontsize=8)
    ax.set_xlabel("iteration index (0 = warm-up)")
    ax.set_ylabel("step time (ms)")
    no_cp = "/iterations/change_points/iteration" in f and len(f["/iterations/change_points/iteration"]) == 0
    ax.set_title("Step time per iteration (ms): each rank, and the job median"
                 + ("\nno step time change points" if no_cp else ""))
    return save(fig, out_dir, "step_time.png")


def plot_clock_offsets(f, out_dir, stragglers):
    cols = read(f, "/clock/rank", np.zeros(0, dtype=int))
    fig, ax = plt.subplots(figsize=(max(8, 0.25 * len(cols) + 3), 4.5))
    off = read(f, "/clock/offset_ms", np.zeros(0))
    if len(cols) == 0:
        note(ax, "no clock offsets")
    else:
        host_of = dict(zip(f["/ranks/rank"][()], strings(f["/ranks/host"])))
        hosts = sorted(set(host_of.values()))
        cmap = plt.get_cmap("tab10" if len(hosts) <= 10 else "tab20")
        color_of = {h: cmap(i % cmap.N) for i, h in enumerate(hosts)}
        x = np.arange(len(cols))
        colors = [color_of.get(host_of.get(r), "0.5") for r in cols]
        ax.bar(x, off, color=colors, width=0.8, alpha=0.6)
        ax.scatter(x, off, color=colors, s=14, zorder=3)  # offsets near 0 stay visible
        ax.axhline(0, color="black", lw=0.8)
        handles = [Patch(color=color_of[h], label=h) for h in hosts[:20]]
        ax.legend(handles=handles, title="host", fontsize=8, ncol=max(1, len(handles) // 10), loc="best")
        mark_rank_ticks(ax, "x", list(cols), stragglers)
        ax.set_xlim(-0.6, len(cols) - 0.4)
        unaligned = [r for r, a in zip(cols, read(f, "/clock/aligned", np.ones(len(cols)))) if not a]
        if unaligned:
            ax.set_title(f"not aligned: ranks {', '.join(map(str, unaligned[:10]))}", loc="right", fontsize=9)
    ax.set_xlabel("rank")
    ax.set_ylabel("offset (ms)")
    ax.set_title("Clock offset per rank vs the reference rank (ms, subtracted from its clock)")
    return save(fig, out_dir, "clock_offsets.png")


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    h5_path, out_dir = argv[1], argv[2]
    os.makedirs(out_dir, exist_ok=True)
    with h5py.File(h5_path, "r") as f:
        ranks = list(read(f, "/ranks/rank", np.zeros(0, dtype=int)))
        s_rank = read(f, "/stragglers/rank", np.zeros(0, dtype=int))
        s_cause = strings(f["/stragglers/cause"]) if "/stragglers/cause" in f else [""] * len(s_rank)
        stragglers = dict(zip(s_rank, s_cause))  # rank -> cause
        plot_wait_heatmap(f, out_dir, ranks, stragglers)
        plot_blame(f, out_dir, ranks, stragglers)
        plot_step_time(f, out_dir, stragglers)
        plot_clock_offsets(f, out_dir, stragglers)


if __name__ == "__main__":
    main(sys.argv)
