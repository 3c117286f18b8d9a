#!/usr/bin/python3
"""Plots of a straggler-scan HDF5 file (layout: docs/hdf5-layout.md).

Usage: scripts/plot_stragglers.py OUT.h5 DIR

Writes four PNG files into DIR (created if missing) and prints their paths:
  wait_heatmap.png   wait in matched collectives over time (ms per time bin): the named ranks, then
                     every rank (up to 64 ranks) or the mean per host (more ranks)
  blame_per_rank.png peers' waiting time charged to the rank that started each chain (root blame, ms)
                     per rank, or per host with each rank as a dot; the named ranks listed
  step_time.png      step time per iteration index, per rank (or its spread over ranks) and job median (ms)
  clock_offsets.png  clock offset per rank, or per host with each rank as a dot (ms)
Named ranks: every straggler (the 10 most blamed; more are marked by their host) and the 10 most
blamed ranks, as "rank 261 (slow_gpu, node-32)". Each PNG is at most 2,500 px on its longer side and
lists the ranks it names in its tEXt chunk "straggler-scan:labelled" (LABEL_KEY below).
Empty tables (no stragglers, no change points, no communicators) give a note, not an error.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scan_file  # noqa: E402  (before h5py: no HDF5 plugin is ever loaded)

matplotlib = scan_file.setup_matplotlib()  # Agg; `$` in a host name is not mathtext (text.parse_math off)
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import PowerNorm  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import numpy as np  # noqa: E402

# What the plot scripts share (issue 23) lives here; the others import it from beside them. Every
# script opens its scan through scripts/scan_file.py (installed beside them), which checks the file
# as the untrusted input it is and makes every string printable.
# A PNG's tEXt chunk LABEL_KEY lists the ranks the figure names (comma-separated), so a test can
# check that the straggler is labelled without reading pixels (tests/test_plot_sizes.sh).

MAX_PX = 2500         # longest side of any PNG, whatever the rank count
DPI = 110
PAD_IN = 0.1          # bbox_inches="tight" padding
PER_RANK_MAX = 64     # up to this many ranks a plot draws each rank; above, groups of ranks
MAX_GROUPS = 128      # above this many hosts, consecutive hosts share a group
TOP_BLAME = 10        # the most blamed ranks are always named, stragglers or not
MAX_NAMED_STRAGGLERS = 10  # more stragglers are still marked through their host's group
LABEL_KEY = "straggler-scan:labelled"
STRAGGLER_COLOR = "tab:red"
TOP_COLOR = "tab:orange"


def strings(ds):
    """Fixed-length null-padded strings -> list of str, made printable (scan_file.strings)."""
    return scan_file.strings(ds)


def read(f, path, default=None):
    return f[path][()] if path in f else default


def note(ax, text):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=11, color="0.4", wrap=True)


def save_png(fig, out_dir, name, labelled=(), dpi=DPI):
    """Write the figure, print its path; the dpi shrinks where the figure would exceed MAX_PX."""
    path = os.path.join(out_dir, name)
    scan_file.math_ticks(fig)  # log axes' own labels ($2^{3}$) stay mathtext
    fig.canvas.draw()
    box = fig.get_tightbbox(fig.canvas.get_renderer())  # inches, what bbox_inches="tight" keeps
    longest = max(box.width, box.height) + 2 * PAD_IN
    # 4 px of slack: savefig rounds the bbox outward.
    dpi = min(dpi, (MAX_PX - 4) / longest)
    fig.savefig(path, dpi=dpi, bbox_inches="tight", pad_inches=PAD_IN,
                metadata={LABEL_KEY: ",".join(str(int(r)) for r in labelled)})
    plt.close(fig)
    print(path)
    return path


class Ranks:
    """The scan's ranks, their hosts and blame, its stragglers, the ranks to name and the groups."""

    def __init__(self, f):
        self.ranks = [int(r) for r in read(f, "/ranks/rank", np.zeros(0, dtype=int))]
        hosts = strings(f["/ranks/host"]) if "/ranks/host" in f else [""] * len(self.ranks)
        self.host_of = dict(zip(self.ranks, hosts))
        # Root blame (charged to the rank that started each chain of waits); older files: direct blame.
        blame = read(f, "/ranks/root_blame_ms")
        if blame is None:
            blame = read(f, "/ranks/blame_ms", np.zeros(len(self.ranks)))
        self.blame = dict(zip(self.ranks, (float(b) for b in blame)))
        s_rank = [int(r) for r in read(f, "/stragglers/rank", np.zeros(0, dtype=int))]
        s_cause = strings(f["/stragglers/cause"]) if "/stragglers/cause" in f else [""] * len(s_rank)
        self.stragglers = dict(zip(s_rank, s_cause))  # rank -> cause, most blamed first
        named = s_rank[:MAX_NAMED_STRAGGLERS]
        top = sorted((r for r in self.ranks if self.blame[r] > 0), key=lambda r: -self.blame[r])[:TOP_BLAME]
        self.labelled = named + [r for r in top if r not in named]
        self.kind, self.group_labels, self.group_members = self._groups()
        self.group_of = {r: g for g, members in enumerate(self.group_members) for r in members}

    @property
    def per_rank(self):
        return self.kind == "rank"

    @property
    def all_named(self):
        """Every rank is named (a small run): a separate panel of named ranks would repeat them all."""
        return self.per_rank and set(self.ranks) <= set(self.labelled)

    def name(self, r):
        """'rank 261 (slow_gpu, node-32)': the straggler's cause, then its host."""
        words = [self.stragglers[r] or "straggler"] if r in self.stragglers else []
        if self.host_of.get(r):
            words.append(self.host_of[r])
        return f"rank {r}" + (f" ({', '.join(words)})" if words else "")

    def color(self, r, default="tab:blue"):
        return STRAGGLER_COLOR if r in self.stragglers else TOP_COLOR if r in self.labelled else default

    def _groups(self):
        """(kind, labels, member ranks): each rank; else each host; else runs of consecutive hosts."""
        if len(self.ranks) <= PER_RANK_MAX:
            return "rank", [str(r) for r in self.ranks], [[r] for r in self.ranks]
        by_host = {}
        for r in sorted(self.ranks):
            by_host.setdefault(self.host_of[r], []).append(r)
        # Hosts in the order of their lowest rank (node-9 before node-10, whatever the names say),
        # so a group of consecutive hosts is a range of ranks.
        hosts = sorted(by_host, key=lambda h: by_host[h][0])
        k = math.ceil(len(hosts) / MAX_GROUPS)
        labels, members = [], []
        for i in range(0, len(hosts), k):
            chunk = hosts[i:i + k]
            labels.append(chunk[0] if k == 1 else f"{chunk[0]}..{chunk[-1]}")
            members.append([r for h in chunk for r in by_host[h]])
        return ("host" if k == 1 else f"{k} hosts"), labels, members

    def group_word(self):
        """How a group reads in an axis label: 'rank', 'host' or 'group of 4 hosts'."""
        return self.kind if self.kind in ("rank", "host") else f"group of {self.kind}"

    def groups_phrase(self):
        """'every rank', '512 ranks as 64 hosts' or '4096 ranks as 128 groups of 4 hosts'."""
        if self.per_rank:
            return "every rank"
        n = len(self.group_members)
        return f"{len(self.ranks)} ranks as {n} " + ("hosts" if self.kind == "host" else f"groups of {self.kind}")

    def aggregate(self, matrix, row_of, how=np.mean):
        """Groups x columns from a ranks x columns matrix (rank r in row row_of[r]); NaN: no rows."""
        out = np.full((len(self.group_members), matrix.shape[1]), np.nan)
        for g, members in enumerate(self.group_members):
            rows = [row_of[r] for r in members if r in row_of]
            if rows:
                out[g] = how(matrix[rows], axis=0)
        return out

    def group_ticks(self, ax, axis, max_ticks=32, fontsize=7):
        """Tick a subset of the groups and every group holding a straggler (red, naming it)."""
        n = len(self.group_labels)
        hot = {}
        for r in self.stragglers:
            if r in self.group_of:
                hot.setdefault(self.group_of[r], []).append(r)
        step = max(1, math.ceil(n / max_ticks))
        # Drop the regular ticks next to a straggler's so their labels do not overlap.
        near = {g + d for g in hot for d in range(-(step // 2), step // 2 + 1)}
        shown = sorted(set(g for g in range(0, n, step) if g not in near) | set(hot))
        labels = []
        for g in shown:
            text = self.group_labels[g]
            if g in hot and not self.per_rank:
                text += " (" + ", ".join(f"rank {r}" for r in hot[g][:2]) + (", ..." if len(hot[g]) > 2 else "") + ")"
            labels.append(text)
        if axis == "y":
            ax.set_yticks(shown)
            ticks = ax.set_yticklabels(labels, fontsize=fontsize)
        else:
            ax.set_xticks(shown)
            long_labels = n > 48 or (n > 16 and not self.per_rank)  # rank numbers are short; host names not
            ticks = ax.set_xticklabels(labels, fontsize=fontsize, rotation=90 if long_labels else 0)
        for tick, g in zip(ticks, shown):
            if g in hot:
                tick.set_color(STRAGGLER_COLOR)
                tick.set_fontweight("bold")

    def named_ticks(self, ax, axis, named, fontsize=7):
        """Tick each named rank by name, stragglers in red."""
        names = [self.name(r) for r in named]
        if axis == "y":
            ax.set_yticks(range(len(named)))
            ticks = ax.set_yticklabels(names, fontsize=fontsize)
        else:
            ax.set_xticks(range(len(named)))
            ticks = ax.set_xticklabels(names, fontsize=fontsize, rotation=90)
        for tick, r in zip(ticks, named):
            if r in self.stragglers:
                tick.set_color(STRAGGLER_COLOR)
                tick.set_fontweight("bold")

    def named_title(self):
        """What the panel of named ranks holds, with how many stragglers went unnamed."""
        more = len(self.stragglers) - MAX_NAMED_STRAGGLERS
        text = "stragglers (red) and the {} most blamed ranks".format(TOP_BLAME)
        return text + (f"; {more} more stragglers marked by their {self.group_word()}" if more > 0 else "")


MAX_BINS = 400
MAX_LEGEND_STRAGGLERS = 6  # more would push the legend over the plot
# tab10 without red and orange, which mark stragglers and the most blamed ranks.
HOST_COLORS = ["tab:blue", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan"]


def wait_matrix(f, ranks):
    """(rank x time bin) summed wait in ms, bin edges in s from the first op, ops; None: no ops."""
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
        cols = [m for m, r in enumerate(members[mem_off[c]:mem_off[c] + s]) if int(r) in row_of]
        rows = [row_of[int(members[mem_off[c] + m])] for m in cols]
        # One scatter-add per communicator (a loop over members is slow at thousands of ranks).
        np.add.at(waits, (np.array(rows)[None, :], bins[:, None]), w[:, cols])
    return waits, (edges - t0) / 1e9, len(first)


def plot_wait_heatmap(f, out_dir, info):
    res = wait_matrix(f, info.ranks) if info.ranks else None
    if res is None:
        fig, ax = plt.subplots(figsize=(12, 4))
        note(ax, "no matched collectives (no NCCL communicators found)")
        ax.set_axis_off()
        ax.set_title("Wait in collectives (last arrival - own arrival) over time")
        return save_png(fig, out_dir, "wait_heatmap.png")
    waits, edges_s, nops = res
    row_of = {r: i for i, r in enumerate(info.ranks)}
    # A small run whose ranks are all named: one panel, each rank by name.
    named = list(info.ranks) if info.all_named else [r for r in info.labelled if r in row_of]
    groups = info.aggregate(waits, row_of, np.mean)
    # Square-root color scale: the rare long waits (pipeline bubbles) would hide a steady
    # straggler's few-ms-per-bin pattern on a linear scale.
    vmax = max(np.nanpercentile(np.vstack([groups, waits[[row_of[r] for r in named]]]), 99.5), 1e-9)
    heat = dict(aspect="auto", interpolation="nearest", cmap="magma", norm=PowerNorm(gamma=0.5, vmin=0, vmax=vmax))
    extent = lambda rows: (edges_s[0], edges_s[-1], rows - 0.5, -0.5)  # noqa: E731
    if info.all_named:
        fig, ax = plt.subplots(figsize=(12, 6), layout="constrained")
        axes = [ax]
        im = ax.imshow(waits, extent=extent(len(named)), **heat)
        info.named_ticks(ax, "y", named)
        ax.set_title("every rank, named (stragglers in red)", fontsize=9, loc="left")
    else:
        fig, axes = plt.subplots(2, 1, figsize=(12, 8.5), sharex=True, layout="constrained",
                                 gridspec_kw={"height_ratios": [max(len(named), 2), 2.6 * max(len(named), 6)]})
        if named:
            axes[0].imshow(waits[[row_of[r] for r in named]], extent=extent(len(named)), **heat)
            info.named_ticks(axes[0], "y", named)
        else:
            note(axes[0], "no rank named (no blame)")
        axes[0].set_title("named: " + info.named_title(), fontsize=9, loc="left")
        im = axes[1].imshow(groups, extent=extent(len(groups)), **heat)
        info.group_ticks(axes[1], "y")
        axes[1].set_ylabel("rank" if info.per_rank else f"{info.group_word()}: mean of its ranks")
        axes[1].set_title(info.groups_phrase() + " (with a straggler: red)", fontsize=9, loc="left")
    axes[-1].set_xlabel(f"time since first collective (s, clock-corrected; {len(edges_s) - 1} bins, {nops} ops)")
    cb = fig.colorbar(im, ax=list(axes), pad=0.01, fraction=0.03)
    cb.set_label("wait summed per bin (ms, sqrt scale)")
    fig.suptitle("Wait in collectives (last arrival - own arrival) over time")
    return save_png(fig, out_dir, "wait_heatmap.png", named)


def draw_groups(ax, info, values, how=np.max):
    """Per group a bar of how(values of its ranks) and, for groups of several ranks, a dot per rank."""
    x = np.arange(len(info.group_members))
    bars = [how([values[r] for r in m if r in values]) if any(r in values for r in m) else 0.0
            for m in info.group_members]
    hot = {info.group_of[r] for r in info.stragglers if r in info.group_of}
    if info.per_rank:
        colors = [info.color(m[0]) for m in info.group_members]
        ax.bar(x, bars, color=colors, width=0.8)
    else:
        ax.bar(x, bars, color=["#f4b6b6" if g in hot else "#c6dbef" for g in x], width=0.9)
        dots = [(info.group_of[r], v) for r, v in values.items() if r in info.group_of]
        rng = np.random.default_rng(0)  # jitter spreads a host's dots; fixed seed: same picture each run
        gx = np.array([g for g, _ in dots]) + rng.uniform(-0.3, 0.3, len(dots))
        ax.scatter(gx, [v for _, v in dots], s=4, color="tab:blue", alpha=0.5, lw=0, zorder=2)
        for r in reversed(info.labelled):  # stragglers last: drawn on top
            if r in values and r in info.group_of:
                ax.scatter([info.group_of[r]], [values[r]], s=30, color=info.color(r), edgecolor="black",
                           lw=0.5, zorder=3)
    info.group_ticks(ax, "x")
    ax.set_xlim(-0.6, len(x) - 0.4)
    return bars


def annotate_stragglers(ax, info, values, limit=3):
    """Name the most blamed stragglers beside their bar or dot (more would overlap)."""
    for r in list(info.stragglers)[:limit]:
        if r in values and r in info.group_of:
            ax.annotate(info.name(r), (info.group_of[r], values[r]), xytext=(6, 2), textcoords="offset points",
                        ha="left", va="bottom", fontsize=8, color=STRAGGLER_COLOR, fontweight="bold",
                        bbox=dict(boxstyle="round,pad=0.15", fc="white", alpha=0.7, lw=0))  # over dense dots


def named_bars(ax, info, values, unit):
    """Horizontal bars of the named ranks' values (stragglers, then the most blamed), labelled by name."""
    named = [r for r in info.labelled if r in values]
    if not named:
        note(ax, "no rank named")
        ax.set_axis_off()
        return named
    y = np.arange(len(named))
    ax.barh(y, [values[r] for r in named], color=[info.color(r) for r in named])
    info.named_ticks(ax, "y", named)
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    ax.xaxis.set_major_locator(MaxNLocator(4))  # long values (125000) must not run together
    ax.set_title("named ranks", fontsize=9, loc="left")
    return named


def plot_blame(f, out_dir, info):
    fig, (ax, side) = plt.subplots(1, 2, figsize=(13, 5.5), layout="constrained",
                                   gridspec_kw={"width_ratios": [2.6, 1]})
    blame = info.blame
    named = []
    if not info.ranks:
        note(ax, "no ranks")
        side.set_axis_off()
    else:
        draw_groups(ax, info, blame)
        med = float(np.median(list(blame.values())))
        ax.axhline(med, color="0.4", ls="--", lw=1, label=f"median rank {med:.1f} ms")
        annotate_stragglers(ax, info, blame)
        ax.set_ylim(0, max(max(blame.values()), 1.0) * 1.15)
        if not any(blame.values()):
            note(ax, "no rank kept its peers waiting (no matched collectives?)")
        handles = [Patch(color=STRAGGLER_COLOR, label="straggler"), Patch(color=TOP_COLOR, label="10 most blamed")]
        named = named_bars(side, info, blame, "root blame (ms)")
        if named:  # in the side panel, whose bars shrink downwards: on the main one it could hide a straggler
            side.legend(handles=ax.get_legend_handles_labels()[0] + handles, loc="lower right", fontsize=8)
    ax.set_xlabel("rank" if info.per_rank else f"{info.group_word()} (bar: its most blamed rank; dots: each rank)")
    ax.set_ylabel("root blame (ms)")
    fig.suptitle("Blame per rank: peers' time waiting in collectives, charged to the rank that started the wait"
                 + ("" if info.stragglers else "\nno stragglers found"), fontsize=11)
    return save_png(fig, out_dir, "blame_per_rank.png", named)


def step_spread(ax, x, m):
    """Many ranks: their spread per iteration instead of a line each."""
    with np.errstate(all="ignore"):
        lo, hi = np.nanmin(m, axis=1), np.nanmax(m, axis=1)
        p10, p90 = np.nanpercentile(m, 10, axis=1), np.nanpercentile(m, 90, axis=1)
    ax.fill_between(x, lo, hi, color="0.85", label=f"min-max over {m.shape[1]} ranks", zorder=1)
    ax.fill_between(x, p10, p90, color="0.65", label="10th-90th percentile", zorder=1)


def plot_step_time(f, out_dir, info):
    fig, ax = plt.subplots(figsize=(10, 5))
    m = read(f, "/iterations/step_ms_matrix")
    cols = [int(r) for r in read(f, "/clock/rank", np.zeros(0, dtype=int))]
    job = read(f, "/iterations/job_step_ms", np.zeros(0))
    shown = []
    if m is None or m.size == 0:
        note(ax, "no iterations found")
    else:
        m = np.where(m > 0, m, np.nan)  # 0 = the rank has no such iteration
        x = np.arange(m.shape[0])
        if info.per_rank:
            for k, r in enumerate(cols):
                if r not in info.stragglers:
                    ax.plot(x, m[:, k], color="0.6", lw=0.5, alpha=0.6, zorder=1)
            ax.plot([], [], color="0.6", lw=0.5, label="other ranks" if info.stragglers else "each rank")
        else:
            step_spread(ax, x, m)
        col_of = {r: k for k, r in enumerate(cols)}
        strag = [r for r in info.stragglers if r in col_of]  # most blamed first
        shown = strag[:MAX_LEGEND_STRAGGLERS]
        for r in strag:
            ax.plot(x, m[:, col_of[r]], color=STRAGGLER_COLOR, lw=1.2, zorder=3, label=info.name(r) if r in shown else None)
        if len(strag) > len(shown):
            ax.plot([], [], color=STRAGGLER_COLOR, lw=1.2, label=f"{len(strag) - len(shown)} more stragglers")
        if len(job):
            ax.plot(np.arange(len(job)), job, color="black", lw=2.5, label="job (median over ranks)", zorder=4)
        mark_step_changes(f, ax)
        scale_steady(ax, m)
        ax.legend(loc="best", fontsize=8)
    ax.set_xlabel("iteration index (0 = warm-up)")
    ax.set_ylabel("step time (ms)")
    no_cp = "/iterations/change_points/iteration" in f and len(f["/iterations/change_points/iteration"]) == 0
    ax.set_title("Step time per iteration (ms): " + ("each rank" if info.per_rank else "the ranks' spread")
                 + ", and the job median" + ("\nno step time change points" if no_cp else ""))
    return save_png(fig, out_dir, "step_time.png", shown)


def mark_step_changes(f, ax):
    # Change points are iteration numbers: index them through the first rank's numbering.
    numbers = read(f, "/iterations/number", np.zeros(0))
    it_rank = read(f, "/iterations/rank", np.zeros(0))
    first_rank = list(numbers[it_rank == it_rank[0]]) if len(it_rank) else []
    for j, cp in enumerate(read(f, "/iterations/change_points/iteration", np.zeros(0, dtype=int))):
        xi = first_rank.index(cp) if cp in first_rank else cp
        ax.axvline(xi, color="tab:orange", ls="--", lw=1.5, label="step time change" if j == 0 else None)


def scale_steady(ax, m):
    """Scale to the steady state (the warm-up may be far off) and shade the warm-up."""
    steady = m[1:] if m.shape[0] > 1 else m
    if np.isfinite(steady).any():
        lo, hi = np.nanmin(steady), np.nanmax(steady)
        pad = max(0.05 * (hi - lo), 0.01 * hi)
        ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlim(-0.5, m.shape[0] - 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    warm = "warm-up"
    if m.shape[0] > 1 and np.nanmax(m[0]) > ax.get_ylim()[1]:
        warm += f" (up to {np.nanmax(m[0]):.0f} ms, off scale)"
    ax.axvspan(-0.5, 0.5, color="0.92", zorder=0, label=warm)


def host_colors(ax, info, cols):
    """Per-rank bars: a color per host, a legend up to 8 hosts, else a color bar of host indices."""
    hosts = sorted(set(info.host_of.values()))
    if len(hosts) <= len(HOST_COLORS):
        color_of = dict(zip(hosts, HOST_COLORS))
        ax.legend(handles=[Patch(color=color_of[h], label=h) for h in hosts], title="host", fontsize=7,
                  ncol=2 if len(hosts) > 5 else 1, loc="best")
    else:
        cmap = plt.get_cmap("viridis", len(hosts))
        color_of = {h: cmap(i) for i, h in enumerate(hosts)}
        sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(-0.5, len(hosts) - 0.5))
        plt.colorbar(sm, ax=ax, pad=0.01).set_label(f"host index ({len(hosts)} hosts, {hosts[0]} .. {hosts[-1]})")
    return [color_of.get(info.host_of.get(r), "0.5") for r in cols]


def plot_clock_offsets(f, out_dir, info):
    cols = [int(r) for r in read(f, "/clock/rank", np.zeros(0, dtype=int))]
    off = dict(zip(cols, (float(o) for o in read(f, "/clock/offset_ms", np.zeros(0)))))
    fig, (ax, side) = plt.subplots(1, 2, figsize=(13, 5), layout="constrained",
                                   gridspec_kw={"width_ratios": [2.6, 1]})
    named = []
    if not cols:
        note(ax, "no clock offsets")
        side.set_axis_off()
    else:
        if info.per_rank:
            # Per-rank bars colored by host; the scatter keeps offsets near 0 visible.
            x = [info.group_of.get(r, 0) for r in cols]
            colors = host_colors(ax, info, cols)
            ax.bar(x, [off[r] for r in cols], color=colors, width=0.8, alpha=0.6)
            ax.scatter(x, [off[r] for r in cols], color=colors, s=14, zorder=3)
            info.group_ticks(ax, "x")
            ax.set_xlim(-0.6, len(info.group_members) - 0.4)
        else:
            draw_groups(ax, info, off, how=np.median)
        ax.axhline(0, color="black", lw=0.8)
        annotate_stragglers(ax, info, off)
        named = named_bars(side, info, off, "offset (ms)")
        unaligned = [r for r, a in zip(cols, read(f, "/clock/aligned", np.ones(len(cols)))) if not a]
        if unaligned:
            ax.set_title(f"not aligned: ranks {', '.join(map(str, unaligned[:10]))}"
                         + (f" and {len(unaligned) - 10} more" if len(unaligned) > 10 else ""), loc="right", fontsize=9)
    ax.set_xlabel("rank" if info.per_rank else f"{info.group_word()} (bar: median of its ranks; dots: each rank)")
    ax.set_ylabel("offset (ms)")
    fig.suptitle("Clock offset per rank vs the reference rank (ms, subtracted from its clock)", fontsize=11)
    return save_png(fig, out_dir, "clock_offsets.png", named)


READS = ("/ranks", "/stragglers", "/collectives", "/iterations", "/clock")  # what the plots read


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    h5_path, out_dir = argv[1], argv[2]
    with scan_file.open_scan(h5_path, reads=READS) as f:  # a file breaking a rule: one line, exit 2
        os.makedirs(out_dir, exist_ok=True)
        info = Ranks(f)
        plot_wait_heatmap(f, out_dir, info)
        plot_blame(f, out_dir, info)
        plot_step_time(f, out_dir, info)
        plot_clock_offsets(f, out_dir, info)


if __name__ == "__main__":
    main(sys.argv)
