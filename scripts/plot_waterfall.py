#!/usr/bin/python3
"""Step-time waterfall plots of straggler-scan HDF5 files (/waterfall: docs/waterfall.md).

Usage: scripts/plot_waterfall.py SCAN.h5 [OTHER.h5] DIR

Writes (DIR created if missing) and prints the path of:
  DIR/waterfall.png   one panel per phase of SCAN.h5 (at most 4, the last ones): the phase's mean
                      step built up part by part (stragglers, slow links, exposed communication,
                      compute, idle, pipeline bubble, waiting), each bar starting where the last
                      ended, labelled with its ms and share; with OTHER.h5 (e.g. the good run
                      before a bad one) the last phase of each side by side, on one scale.
                      Beyond 6 stragglers and slow links per phase, the smaller ones share a bar.
                      Its tEXt chunk "straggler-scan:labelled" lists the stragglers' ranks named.
A file without a waterfall (no collectives, or a scan from before it) gives a note, not an error.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scan_file  # noqa: E402  (opens and checks the scan; before h5py)

matplotlib = scan_file.setup_matplotlib()  # Agg; text is never mathtext
import matplotlib.pyplot as plt  # noqa: E402

# Shared with plot_stragglers.py, beside it.
from plot_stragglers import save_png  # noqa: E402

MAX_PANELS = 4
# A phase has a part per straggler (up to 16) and per slow link; past this many, the smaller ones
# share one bar, so four panels stay readable under 2,500 px.
MAX_ITEMS = 6
COLORS = {"straggler": "#d62728", "slow_link": "#ff7f0e", "exposed_communication": "#9467bd", "compute": "#2ca02c",
          "idle": "#8c564b", "pipeline_bubble": "#17becf", "waiting": "#7f7f7f"}


def text(v):
    """A string from the file, made printable (scan_file.text)."""
    return scan_file.text(v) if isinstance(v, bytes) else str(v)


def read_phases(path):
    """[(title, step_ms, [(part, label, ms, share, ranks)])] per phase, in order."""
    with scan_file.open_scan(path, reads=("/waterfall",)) as f:  # a file breaking a rule: one line, exit 2
        if "/waterfall" not in f or len(f["/waterfall/phase"]) == 0:
            return []
        g = f["/waterfall"]
        cols = {k: g[k][()] for k in ("phase", "from_iteration", "to_iteration", "step_ms", "part", "label", "ms", "share")}
        ranks, offsets = (g["ranks"][()], g["ranks_offsets"][()]) if "ranks_offsets" in g else ([], None)
    phases = {}
    for i in range(len(cols["phase"])):
        p = int(cols["phase"][i])
        title = f"iterations {int(cols['from_iteration'][i])}-{int(cols['to_iteration'][i])}"
        phases.setdefault(p, [title, float(cols["step_ms"][i]), []])
        row_ranks = [int(r) for r in ranks[offsets[i]:offsets[i + 1]]] if offsets is not None else []
        phases[p][2].append((text(cols["part"][i]), text(cols["label"][i]), float(cols["ms"][i]),
                             float(cols["share"][i]), row_ranks))
    return [(t, s, merge_items(parts)) for t, s, parts in (phases[p] for p in sorted(phases))]


def merge_items(parts):
    """Keep the MAX_ITEMS costliest straggler and slow-link parts; the rest become one part."""
    items = [k for k, p in enumerate(parts) if p[0] in ("straggler", "slow_link")]
    if len(items) <= MAX_ITEMS:
        return parts
    keep = set(sorted(items, key=lambda k: -abs(parts[k][2]))[:MAX_ITEMS])
    rest = [parts[k] for k in items if k not in keep]
    merged = ("straggler", f"{len(rest)} more stragglers and slow links", sum(p[2] for p in rest),
              sum(p[3] for p in rest), [])  # their ranks are not named on the figure
    out = [p for k, p in enumerate(parts[:items[-1] + 1]) if k not in items or k in keep]
    return out + [merged] + parts[items[-1] + 1:]  # after the last such part, as they come in order


def draw(ax, name, phase, xmax):
    title, step, parts = phase
    left = 0.0
    labels = []
    for y, (part, label, ms, share, _) in enumerate(parts):
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
    panels = []
    for path in files:
        phases = read_phases(path)
        keep = phases[-1:] if len(files) > 1 else phases[-MAX_PANELS:]
        panels += [(scan_file.printable(os.fsencode(os.path.basename(path))), ph) for ph in keep]
    os.makedirs(out_dir, exist_ok=True)
    if not panels:
        fig, ax = plt.subplots(figsize=(8, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, "no waterfall in " + ", ".join(scan_file.printable(os.fsencode(p)) for p in files)
                + " (no matched collectives?)", ha="center", va="center")
    else:
        xmax = max(max(ph[1], max(sum(max(p[2], 0) for p in ph[2][:k + 1]) for k in range(len(ph[2])))) for _, ph in panels)
        rows = max(len(ph[2]) for _, ph in panels) * len(panels)
        # 21 in at most: 2,310 px at 110 dpi (4 panels of 13 parts still get 0.38 in a bar).
        fig, axes = plt.subplots(len(panels), 1, figsize=(10, min(21.0, 2.2 + 0.45 * rows)), squeeze=False)
        for ax, (name, ph) in zip(axes[:, 0], panels):
            draw(ax, name, ph, xmax)
        fig.suptitle("where the step goes (docs/waterfall.md)", fontsize=10)
        fig.tight_layout()
    named = sorted({r for _, ph in panels for part in ph[2] for r in part[4]})
    save_png(fig, out_dir, "waterfall.png", named)  # prints its path
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
