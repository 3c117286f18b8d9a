#!/usr/bin/python3
"""Step-time waterfall plots of straggler-scan HDF5 files (/waterfall: docs/waterfall.md).

Usage: scripts/plot_waterfall.py SCAN.h5 [OTHER.h5] DIR

Writes (DIR created if missing) and prints the path of:
  DIR/waterfall.png   one panel per phase of SCAN.h5 (at most 4, the last ones): the phase's mean
                      step built up part by part (stragglers, slow links, exposed communication,
                      compute, idle, pipeline bubble, waiting), each bar starting where the last
                      ended, labelled with its ms and share; with OTHER.h5 (e.g. the good run
                      before a bad one) the last phase of each side by side, on one scale.
A file without a waterfall (no collectives, or a scan from before it) gives a note, not an error.
"""
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MAX_PANELS = 4
COLORS = {"straggler": "#d62728", "slow_link": "#ff7f0e", "exposed_communication": "#9467bd", "compute": "#2ca02c",
          "idle": "#8c564b", "pipeline_bubble": "#17becf", "waiting": "#7f7f7f"}


def text(v):
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def read_phases(path):
    """[(title, step_ms, [(part, label, ms, share)])] per phase, in order."""
    with h5py.File(path, "r") as f:
        if "/waterfall" not in f or len(f["/waterfall/phase"]) == 0:
            return []
        g = f["/waterfall"]
        cols = {k: g[k][()] for k in ("phase", "from_iteration", "to_iteration", "step_ms", "part", "label", "ms", "share")}
    phases = {}
    for i in range(len(cols["phase"])):
        p = int(cols["phase"][i])
        title = f"iterations {int(cols['from_iteration'][i])}-{int(cols['to_iteration'][i])}"
        phases.setdefault(p, [title, float(cols["step_ms"][i]), []])
        phases[p][2].append((text(cols["part"][i]), text(cols["label"][i]), float(cols["ms"][i]), float(cols["share"][i])))
    return [tuple(phases[p]) for p in sorted(phases)]


def draw(ax, name, phase, xmax):
    title, step, parts = phase
    left = 0.0
    labels = []
    for y, (part, label, ms, share) in enumerate(parts):
        ax.barh(y, ms, left=left if ms >= 0 else left + ms, color=COLORS.get(part, "#bcbd22"))
        ax.text(max(left, left + ms) + xmax * 0.01, y, f"{ms:.1f} ms ({100 * share:.1f}%)", va="center", fontsize=8)
        left += ms
        labels.append(label if len(label) <= 42 else label[:40] + "..")
    ax.barh(len(parts), step, color="black")
    ax.text(step + xmax * 0.01, len(parts), f"{step:.1f} ms", va="center", fontsize=8, fontweight="bold")
    labels.append("the step")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, xmax * 1.3)
    ax.set_xlabel("ms per step")
    ax.set_title(f"{name}: {title}", fontsize=9)


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    files, out_dir = argv[1:-1], argv[-1]
    os.makedirs(out_dir, exist_ok=True)
    panels = []
    for path in files:
        phases = read_phases(path)
        keep = phases[-1:] if len(files) > 1 else phases[-MAX_PANELS:]
        panels += [(os.path.basename(path), ph) for ph in keep]
    out = os.path.join(out_dir, "waterfall.png")
    if not panels:
        fig, ax = plt.subplots(figsize=(8, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, "no waterfall in " + ", ".join(files) + " (no matched collectives?)", ha="center", va="center")
    else:
        xmax = max(max(ph[1], max(sum(max(p[2], 0) for p in ph[2][:k + 1]) for k in range(len(ph[2])))) for _, ph in panels)
        fig, axes = plt.subplots(len(panels), 1, figsize=(10, 2.2 + 0.45 * max(len(ph[2]) for _, ph in panels) * len(panels)),
                                 squeeze=False)
        for ax, (name, ph) in zip(axes[:, 0], panels):
            draw(ax, name, ph, xmax)
        fig.suptitle("where the step goes (docs/waterfall.md)", fontsize=10)
        fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
