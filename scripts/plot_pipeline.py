#!/usr/bin/python3
"""Pipeline bubble plots of a straggler-scan HDF5 file (/pipeline: docs/pipeline.md).

Usage: scripts/plot_pipeline.py OUT.h5 DIR

Writes (DIR created if missing) and prints the paths of:
  DIR/pipeline_flush.png   one steady flush of the pipeline with the largest bubble: per stage,
                           its measured time in the flush span (idle before its first p2p op, its
                           work, its time in p2p kernels without work, idle after) beside the ideal schedule of the same
                           p, m, v and median stage work (forward and backward blocks per chunk-step)
  DIR/pipeline_stages.png  measured bubble per stage against (p-1)/(v m), and the job's
A run without a measured pipeline gives a note on the figure, not an error.
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

MAX_STAGE_ROWS = 24  # the flush figure's height stops growing here (its PNG stays under 2,500 px)


def attr(g, name, default=None):
    """An attribute; strings (and lists of them) made printable."""
    return scan_file.text(g.attrs.get(name, default))


def ideal_blocks(p, m, v, schedule):
    """(stage, start, length, kind) of the ideal schedule in chunk-steps (forward 1/3, backward 2/3)."""
    f, b = 1.0 / 3, 2.0 / 3
    n = m * v
    blocks = []
    if schedule == "gpipe":
        for s in range(p):
            for i in range(n):
                blocks.append((s, (s + i) * f, f, "F"))
            for i in range(n):
                blocks.append((s, (n + p - 1) * f + (p - 1 - s + i) * b, b, "B"))
        return blocks
    # 1F1B (interleaved: the same shape over n = m v chunk-steps): warm-up forwards, one forward
    # and one backward each, cool-down backwards; a forward waits for its upstream stage, a
    # backward for its downstream one. Sweeps until the times settle.
    order = []
    for s in range(p):
        warm = min(p - s - 1, n)
        o = [("F", i) for i in range(warm)]
        for i in range(n - warm):
            o += [("F", warm + i), ("B", i)]
        order.append(o + [("B", i) for i in range(n - warm, n)])
    t_f, t_b = np.zeros((p, n)), np.zeros((p, n))
    for _ in range(2 * p + 2):
        for s in range(p):
            t = 0.0
            for kind, i in order[s]:
                if kind == "F":
                    t = max(t, t_f[s - 1][i] + f if s > 0 else 0.0)
                    t_f[s][i], t = t, t + f
                else:
                    t = max(t, t_b[s + 1][i] + b if s < p - 1 else 0.0)
                    t_b[s][i], t = t, t + b
    for s in range(p):
        for i in range(n):
            blocks.append((s, t_f[s][i], f, "F"))
            blocks.append((s, t_b[s][i], b, "B"))
    return blocks


def plot_flush(f, out):
    st, fl = f["/pipeline/stages"], f["/pipeline/flushes"]
    p, m, v = int(attr(st, "pp", 0)), int(attr(st, "microbatches", 0)), int(attr(st, "virtual_stages", 1))
    schedule = attr(st, "schedule", "1f1b")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(14, max(3, 0.5 * min(p, MAX_STAGE_ROWS) + 1.5)))
    rows = {k: fl[k][()] for k in fl.keys()}
    if not int(attr(st, "measured", 0)) or len(rows.get("stage", [])) == 0:
        a1.text(0.5, 0.5, "pipeline not measured: " + str(attr(st, "why_not", "")), ha="center", va="center", wrap=True)
        a2.axis("off")
        save_png(fig, out, "pipeline_flush.png")
        return
    # The pipeline with the largest bubble; its median flush.
    pipes = np.unique(rows["pipeline"])
    worst = max(pipes, key=lambda g: rows["bubble_ns"][rows["pipeline"] == g].sum() / max(1.0, rows["work_ns"][rows["pipeline"] == g].sum()))
    flushes = np.unique(rows["flush"][rows["pipeline"] == worst])
    pick = flushes[len(flushes) // 2]
    sel = (rows["pipeline"] == worst) & (rows["flush"] == pick)
    t0 = rows["span_start_ns"][sel].min()
    for i in np.nonzero(sel)[0]:
        s = rows["stage"][i]
        ws, we = (rows["window_start_ns"][i] - t0) / 1e6, (rows["window_end_ns"][i] - t0) / 1e6
        span = (rows["span_end_ns"][i] - t0) / 1e6
        work, p2p = rows["work_ns"][i] / 1e6, rows["p2p_ns"][i] / 1e6
        a1.barh(s, ws, left=0, color="#dddddd")
        a1.barh(s, work, left=ws, color="#2b7bba", label="work (compute, TP collectives)" if s == 0 else None)
        a1.barh(s, p2p, left=ws + work, color="#f39c12", label="in p2p kernels, no work (waiting or transferring)" if s == 0 else None)
        rest = max(0.0, we - ws - work - p2p)
        a1.barh(s, rest, left=ws + work + p2p, color="#eeeeee", hatch="//", label="idle inside its window" if s == 0 else None)
        a1.barh(s, span - we, left=we, color="#dddddd", label="idle (fill / drain)" if s == 0 else None)
        a1.text(span, s, f" rank {rows['rank'][i]}  {100 * (span - work) / max(work, 1e-9):.0f}%", va="center", fontsize=8)
    a1.set_yticks(range(p))
    a1.set_yticklabels([f"stage {s}" for s in range(p)])
    a1.invert_yaxis()
    a1.set_xlabel("ms since stage 0's first forward (corrected clocks)")
    a1.set_title(f"measured: pipeline {worst}, flush {pick} (work and p2p as totals, not positions)")
    a1.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2)
    u = st["chunk_work_ns"][()] / 1e6
    step = float(np.median(u)) if len(u) else 1.0
    for s, start, length, kind in ideal_blocks(p, m, v, schedule):
        a2.barh(s, length * step, left=start * step, color="#2b7bba" if kind == "F" else "#1a4f7a", edgecolor="white", linewidth=0.3)
    a2.set_yticks(range(p))
    a2.set_yticklabels([f"stage {s}" for s in range(p)])
    a2.invert_yaxis()
    a2.set_xlabel("ms (ideal, every stage at the median stage's work)")
    a2.set_title(f"ideal {schedule}: p={p}, m={m}, v={v}; bubble (p-1)/(v m) = {100 * (p - 1) / (v * m):.1f}%")
    fig.tight_layout()
    save_png(fig, out, "pipeline_flush.png", sorted(set(int(r) for r in rows["rank"][sel])))


def plot_stages(f, out):
    st = f["/pipeline/stages"]
    fig, ax = plt.subplots(figsize=(min(14, max(5, 0.35 * max(1, len(st["stage"][()])) + 3)), 4))
    if not int(attr(st, "measured", 0)):
        ax.text(0.5, 0.5, "pipeline not measured: " + str(attr(st, "why_not", "")), ha="center", va="center", wrap=True)
    else:
        stages, bubble = st["stage"][()], st["bubble"][()]
        theory, job = float(attr(st, "bubble_theoretical")), float(attr(st, "bubble_measured"))
        bottleneck = int(attr(st, "bottleneck_stage", -1))
        colors = ["#c0392b" if s == bottleneck else "#2b7bba" for s in stages]
        ax.bar(stages, 100 * bubble, color=colors)
        ax.set_xticks(stages)
        ax.axhline(100 * theory, color="black", linestyle="--", label=f"(p-1)/(v m) = {100 * theory:.1f}%")
        ax.axhline(100 * job, color="#f39c12", label=f"job: {100 * job:.1f}% ({job / theory if theory else 0:.2f}x)")
        causes = attr(st, "causes", [])
        ax.set_title("bubble per stage" + (f"; causes: {', '.join(causes)}" if len(causes) else ""))
        ax.set_xlabel("pipeline stage (red: bottleneck)")
        ax.set_ylabel("idle in the flush / work (%)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_png(fig, out, "pipeline_stages.png")


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    h5, out = argv[1], argv[2]
    with scan_file.open_scan(h5, reads=("/pipeline",)) as f:
        if "/pipeline/stages" not in f:
            sys.stderr.write(f"plot_pipeline.py: {scan_file.printable(os.fsencode(h5))}: no /pipeline group "
                             "(written before the pipeline analysis)\n")
            return 1
        os.makedirs(out, exist_ok=True)
        plot_flush(f, out)  # each prints its PNG's path
        plot_stages(f, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
