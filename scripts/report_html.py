#!/usr/bin/python3
"""One self-contained HTML page of a straggler-scan HDF5 file (layout: docs/hdf5-layout.md).

Usage: scripts/report_html.py OUT.h5 OUT.html [--scan PATH/TO/straggler-scan]

The page reads offline: plotly.js (Debian's python3-plotly) is embedded inline, nothing is fetched.
It holds, in this order: the verdict (stragglers, slow links, desync, or the job's own costs when
no rank stands out), where the step goes (waterfall, what-if), the root-cause findings, interactive
plots (blame per rank, step time, a wait heatmap; by host above MAX_PER_RANK ranks, hover still
naming ranks) and the text report of `straggler-scan report OUT.h5` when that binary is found
(--scan, $STRAGGLER_SCAN, PATH, or the source tree's build/).
The file is opened through scripts/scan_file.py, which refuses a file breaking the rules of
docs/hdf5-layout.md ("Reading a scan someone sent you") before any value is read, and makes every
string printable. Every string from the file is text from untrusted profiles: it is then
HTML-escaped wherever it goes, plot labels and hover text included. A missing or unusable input:
one line on stderr, exit 2.
"""
import argparse
import html
import os
import socket
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scan_file  # noqa: E402  (checks the file; imported before h5py: no HDF5 plugin is ever loaded)
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
import plotly.io as pio  # noqa: E402

MAX_PER_RANK = 256  # above this many ranks a bar or heatmap row per rank no longer reads: by host
STRAGGLER_COLOR = "#d62728"
PLOT_CONFIG = {"displaylogo": False, "responsive": True}
# Columns the page prints as integers without escaping: a crafted file holding text there is refused.
INTEGER_COLUMNS = {"rank", "seq", "iteration", "phase", "from_iteration", "to_iteration", "onset_iteration",
                   "tp", "pp", "dp", "device", "root_cause", "group_seq", "item"}


class InputError(Exception):
    """An input the page cannot be made from: reported in one line, exit 2."""


def esc(value):
    """HTML-escape; quotes as numeric references, which plotly's labels and hovers decode too (it
    knows &lt; &gt; &amp; and numeric ones, not &quot;)."""
    return html.escape(str(value), quote=False).replace('"', "&#34;").replace("'", "&#39;")


def fmt(value, digits=2, none="-"):
    """A float for a table cell; NaN (e.g. a cost not replayed) reads as `none`."""
    missing = value is None or (isinstance(value, float) and not np.isfinite(value))
    return none if missing else f"{value:.{digits}f}"


def decode(value):
    """A string from the file made printable (scan_file.text); other values unchanged."""
    return scan_file.text(value) if isinstance(value, (bytes, np.bytes_)) else value


# ---------------------------------------------------------------- reading the file


def table(f, group):
    """Every 1-D column of a table group as a list (strings decoded); {} when the group is absent,
    so that an older or partial file gives empty sections rather than a crash."""
    if group not in f or not isinstance(f[group], h5py.Group):
        return {}
    cols = {}
    for name, ds in f[group].items():
        if not isinstance(ds, h5py.Dataset):
            continue
        if name in INTEGER_COLUMNS and ds.dtype.kind not in "iu":
            raise InputError(f"{group}/{name}: {ds.dtype} where the layout has integers")
        if ds.ndim == 1:
            cols[name] = [decode(v) for v in ds[()].tolist()] if ds.dtype.kind == "S" else ds[()].tolist()
    return cols


def ragged(cols, name):
    """Row lists of a ragged column (NAME + NAME_offsets)."""
    values, offsets = cols.get(name, []), cols.get(name + "_offsets", [0])
    return [values[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def rows(cols, *ragged_names):
    """A table as a list of dicts, one per row, ragged columns as lists."""
    lists = {n: ragged(cols, n) for n in ragged_names}
    plain = [k for k in cols if not k.endswith("_offsets") and k not in lists]
    n = max((len(cols[k]) for k in plain), default=0)
    return [dict({k: cols[k][i] for k in plain}, **{k: v[i] for k, v in lists.items()}) for i in range(n)]


def attrs(f, path):
    if path not in f:
        return {}
    return {k: decode(v) if np.ndim(v) == 0 else [decode(x) for x in v] for k, v in f[path].attrs.items()}


def matrices(f):
    """The iteration x rank matrices, their column ranks and the iteration numbers of their rows."""
    it = "/iterations"
    need = [f"{it}/{n}" for n in ("step_ms_matrix", "wait_ms_matrix", "blame_ms_matrix", "job_step_ms", "number",
                                   "rank")]
    if not all(p in f for p in need + ["/clock/rank"]) or f[it + "/step_ms_matrix"].size == 0:
        return None  # no iterations found (or a partial file): the page says so instead of plotting
    m = {k: f[f"{it}/{k}_ms_matrix"][()] for k in ("step", "wait", "blame")}
    m["ranks"] = f["/clock/rank"][()].tolist()
    m["job_step"] = f[it + "/job_step_ms"][()].tolist()
    # Row i is iteration index i; name rows by the first rank's iteration numbers when they line up.
    number, rank = f[it + "/number"][()], f[it + "/rank"][()]
    first = number[rank == m["ranks"][0]].tolist() if m["ranks"] else []
    m["numbers"] = first if len(first) == len(m["job_step"]) else list(range(len(m["job_step"])))
    return m


# What load() reads (scan_file's memory rule counts these).
READS = ("/ranks", "/stragglers", "/slow_links", "/desync", "/capture_ended", "/failures", "/iterations", "/waterfall",
         "/what_if", "/findings", "/layout", "/clock")


def load(path):
    """Everything the page shows, read from the HDF5 file. A file that is not a scan, or breaks a rule
    of scan_file (docs/hdf5-layout.md): one line on stderr, exit 2 (from scan_file.fail)."""
    with scan_file.open_scan(path, reads=READS) as f:
        root = attrs(f, "/")
        return {
            "path": path, "name": scan_file.printable(os.fsencode(path)), "root": root, "ranks": table(f, "/ranks"),
            "stragglers": rows(table(f, "/stragglers"), "findings"),
            "slow_links": rows(table(f, "/slow_links"), "hosts", "communicators"),
            "desync": rows(table(f, "/desync"), "missing_ranks", "blocked_ranks"),
            "capture_ended": rows(table(f, "/capture_ended"), "ranks"),
            "failures": rows(table(f, "/failures")),
            "change_points": rows(table(f, "/iterations/change_points"), "culprit_ranks"),
            "waterfall": rows(table(f, "/waterfall"), "ranks"),
            "what_if": rows(table(f, "/what_if"), "ranks"),
            "findings": rows(table(f, "/findings")),
            "layout": rows(table(f, "/layout"), "notes"),
            "clock": attrs(f, "/clock"), "pipeline": attrs(f, "/pipeline/stages"),
            "mfu": attrs(f, "/mfu/iterations"), "matrices": matrices(f),
        }


# ---------------------------------------------------------------- HTML pieces


def html_table(header, body, cls=""):
    """header: column names (ours); body: rows of cells already escaped."""
    head = "".join(f"<th>{h}</th>" for h in header)
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in body)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{trs}</tbody></table>'


def rank_list(ranks, limit=24):
    """Ranks as compact ranges ("3-7, 12"), cut after `limit` ranges."""
    ranks, spans = sorted(set(int(r) for r in ranks)), []
    for r in ranks:
        if spans and r == spans[-1][1] + 1:
            spans[-1][1] = r
        else:
            spans.append([r, r])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans[:limit])
    return text + (f", ... ({len(ranks)} ranks)" if len(spans) > limit else "")


def last_phase(waterfall):
    """The waterfall rows of the last phase: the state the job ended in."""
    if not waterfall:
        return []
    phase = max(r["phase"] for r in waterfall)
    return [r for r in waterfall if r["phase"] == phase]


def finding_groups(d):
    """(finding, its rows, its costliest row), costliest first: one entry per finding rather than per
    rank and finding, since at 512 ranks a shared finding would be 512 rows."""
    groups = {}
    for r in d["findings"]:
        groups.setdefault(r["finding"], []).append(r)
    tops = {name: max(rs, key=lambda r: r["cost_ms_per_step"]) for name, rs in groups.items()}
    return sorted(((n, rs, tops[n]) for n, rs in groups.items()), key=lambda g: -g[2]["cost_ms_per_step"])


def section_header(d):
    root, layout, clock = d["root"], d["layout"], d["clock"]
    facts = [f"{esc(root.get('ranks'))} ranks on {len(root.get('hosts') or [])} hosts",
             f"{esc(root.get('tool'))} {esc(root.get('version'))}"]
    if layout:
        lo = layout[0]
        facts.append(f"layout TP{lo['tp']} x PP{lo['pp']} x DP{lo['dp']} ({esc(lo['order'])}, {esc(lo['source'])})")
    phase = last_phase(d["waterfall"])
    if phase:
        p = phase[0]
        facts.append(f"step {p['step_ms']:.2f} ms (mean, iterations {p['from_iteration']}-{p['to_iteration']})")
    if clock:
        facts.append(f"clock offsets up to {fmt(clock.get('max_offset_ms'), 3)} ms")
    return (f"<h1>straggler-scan report</h1><p class=\"facts\">{' &middot; '.join(facts)}</p>"
            f"<p class=\"cmd\">scan: <code>{esc(d['name'])}</code>; "
            f"command: <code>{esc(root.get('command_line', ''))}</code></p>")


def straggler_rows(stragglers):
    body = []
    for s in stragglers:
        why = esc(s["cause"]) + (f" ({esc(s['cause_detail'])})" if s.get("cause_detail") else "")
        why += f": {esc(s['why'])}" if s.get("why") else ""
        evidence = "".join(f"<li>{esc(e)}</li>" for e in str(s.get("evidence", "")).split("; ") if e)
        since = "unknown" if s["onset_iteration"] < 0 else f"iteration {s['onset_iteration']}"
        body.append([f"<b>rank {s['rank']}</b>", esc(s["host"]),
                     fmt(s["cost_ms_per_step"], 2, "not replayed"), fmt(s["cost_pct"], 1),
                     since, f"{why}<details><summary>evidence</summary><ul>{evidence}</ul></details>",
                     esc(", ".join(s.get("findings", []))) or "-", f"{100 * s['late_fraction']:.0f}%"])
    return html_table(["who", "host", "costs ms/step", "% of step", "since", "why", "findings", "last to arrive"],
                      body, "verdict")


def slow_link_rows(links):
    body = [[esc(", ".join(l["hosts"])), esc(l["collective"]), f"{l['slowdown']:.2f}x",
             esc(", ".join(l["communicators"])), fmt(l["cost_ms_per_step"]), fmt(l["cost_pct"], 1)] for l in links]
    return html_table(["hosts", "collective", "slower than its like", "communicators", "costs ms/step", "% of step"],
                      body, "verdict")


def desync_rows(desync):
    body = [[esc(x["communicator"]), esc(x["collective"]), str(x["seq"]), esc(rank_list(x["missing_ranks"])),
             esc(rank_list(x["blocked_ranks"])) or "-",
             "it stopped by itself" if x["root_cause"] else "blocked elsewhere"] for x in desync]
    return html_table(["communicator", "collective", "first op not reached", "missing ranks", "blocked ranks",
                       "missing rank"], body, "verdict")


def job_own_costs(d):
    """No rank stands out: what the job's own step costs (the last phase's parts beyond compute, the
    best what-if) so that a healthy verdict still says where time could be won."""
    parts = sorted((r for r in last_phase(d["waterfall"]) if r["part"] != "compute" and r["ms"] > 0),
                   key=lambda r: -r["ms"])
    items = [f"<li>{esc(r['label'])}: {r['ms']:.2f} ms per step ({100 * r['share']:.1f}%)</li>" for r in parts[:3]]
    gains = [w for w in d["what_if"] if w["kind"] != "measured" and w["speedup"] > 1.005]
    if gains:
        best = max(gains, key=lambda w: w["speedup"])
        items.append(f"<li>the largest what-if: {esc(best['change'])} brings the step to "
                     f"{best['step_ms']:.2f} ms ({best['speedup']:.2f}x)</li>")
    for name, rs, top in finding_groups(d)[:3]:
        items.append(f"<li>{esc(name)} on ranks {esc(rank_list(r['rank'] for r in rs))}: up to "
                     f"{top['cost_ms_per_step']:.2f} ms per {esc(top['unit'])} (findings below)</li>")
    causes = d["pipeline"].get("causes") or []
    if d["pipeline"].get("measured") and causes:
        items.append(f"<li>pipeline bubble {fmt(d['pipeline'].get('inflation'))}x the schedule's: "
                     f"{esc(', '.join(causes))}</li>")
    return f"<ul>{''.join(items)}</ul>" if items else "<p>nothing measured beyond compute.</p>"


def section_verdict(d):
    out = ["<h2 id=\"verdict\">Verdict</h2>"]
    if d["stragglers"]:
        out += [f"<h3>{len(d['stragglers'])} straggler(s)</h3>", straggler_rows(d["stragglers"])]
    if d["slow_links"]:
        out += [f"<h3>{len(d['slow_links'])} slow link(s)</h3>", slow_link_rows(d["slow_links"])]
    if d["desync"]:
        out += [f"<h3>desync: {len(d['desync'])} communicator(s) stopped at different ops</h3>",
                desync_rows(d["desync"])]
    if not (d["stragglers"] or d["slow_links"] or d["desync"]):
        out += ["<p class=\"healthy\">Healthy as far as ranks go: no straggler, no slow link, no desync. "
                "No rank holds the others back; what the job's own step costs:</p>", job_own_costs(d)]
    if d["capture_ended"]:
        ended = "; ".join(f"{esc(c['communicator'])} op {c['seq']}: ranks {esc(rank_list(c['ranks']))}"
                          for c in d["capture_ended"])
        out.append(f"<p>Captures that ended first (not a hang): {ended}</p>")
    if d["change_points"]:
        body = [[str(c["iteration"]), fmt(c["before_ms"]), fmt(c["after_ms"]),
                 esc(rank_list(c["culprit_ranks"])) or "-", esc(c.get("explanation", ""))] for c in d["change_points"]]
        out += ["<h3>where the step time shifted</h3>",
                html_table(["iteration", "before ms", "after ms", "culprit ranks", "explanation"], body)]
    if d["failures"]:
        body = [[str(x["rank"]) if x["rank"] >= 0 else "?", esc(x["file"]), esc(x["error"])] for x in d["failures"]]
        out += [f"<h3>{len(d['failures'])} profile(s) not analysed</h3>", html_table(["rank", "file", "error"], body)]
    return "\n".join(out)


def section_costs(d, figures):
    out = ["<h2 id=\"costs\">Where the step goes</h2>"]
    if not d["waterfall"]:
        return out[0] + "<p>no waterfall: no steady iterations were replayed.</p>"
    out.append(figures.add(fig_waterfall(d["waterfall"]),
                           "The mean steady step split into parts that add up to it, per phase (docs/waterfall.md)."))
    body = [[str(r["phase"]), f"{r['from_iteration']}-{r['to_iteration']}", esc(r["label"]), f"{r['ms']:.2f}",
             f"{100 * r['share']:.1f}%"] for r in d["waterfall"]]
    out.append(html_table(["phase", "iterations", "part", "ms per step", "share"], body))
    if d["what_if"]:
        body = [[esc(w["change"]), f"{w['step_ms']:.2f}", f"{w['speedup']:.2f}x",
                 f"{w['from_iteration']}-{w['to_iteration']}"] for w in d["what_if"]]
        out += ["<h3>What fixing each cause buys (docs/what-if.md)</h3>",
                html_table(["change", "step ms", "speedup", "iterations replayed"], body)]
    return "\n".join(out)


def section_findings(d):
    out = ["<h2 id=\"findings\">Root-cause findings</h2>"]
    if not d["findings"]:
        return out[0] + "<p>none.</p>"
    fixes = {}
    for s in d["stragglers"]:
        for name in s.get("findings", []):
            fixes.setdefault(name, []).append(f"rank {s['rank']}: {fmt(s['cost_ms_per_step'], 2, 'not replayed')}")
    body = []
    for name, rs, top in finding_groups(d):
        body.append([f"<b>{esc(name)}</b>", esc(rank_list(r["rank"] for r in rs)),
                     f"{top['cost_ms_per_step']:.2f} per {esc(top['unit'])}",
                     esc("; ".join(fixes.get(name, []))) or "-",
                     f"{top['severity']:.2f}", esc(top["evidence"])])
    out.append(html_table(["finding", "ranks", "own cost ms (costliest rank)", "fixing its straggler buys ms/step",
                           "severity", "evidence (costliest rank)"], body))
    return "\n".join(out)


# ---------------------------------------------------------------- plots


class Figures:
    """Turns figures into divs; plotly.js goes inline once, with the first figure."""
    count = 0

    def add(self, fig, caption):
        div = pio.to_html(fig, full_html=False, include_plotlyjs=self.count == 0, config=PLOT_CONFIG,
                          default_width="100%", default_height=f"{fig.layout.height or 450}px")
        self.count += 1
        return f'<figure>{div}<figcaption>{caption}</figcaption></figure>'


def fig_waterfall(waterfall):
    fig = go.Figure()
    for phase in sorted({r["phase"] for r in waterfall}):
        rs = [r for r in waterfall if r["phase"] == phase]
        # Axis labels are cut (a slow link names every host), the hover keeps the whole label; cut
        # labels made alike get a number, as plotly would stack equal categories into one bar.
        x = []
        for r in rs:
            short = r["label"][:40] + ("..." if len(r["label"]) > 40 else "")
            x.append(esc(short) + (f" ({len(x) + 1})" if esc(short) in x else ""))
        x.append("measured step")
        hover = [f"{esc(r['label'])}<br>{r['ms']:.2f} ms per step ({100 * r['share']:.1f}%)" for r in rs]
        fig.add_trace(go.Waterfall(
            name=f"phase {phase} (iterations {rs[0]['from_iteration']}-{rs[0]['to_iteration']})",
            x=x, y=[r["ms"] for r in rs] + [rs[0]["step_ms"]], measure=["relative"] * len(rs) + ["total"],
            hovertext=hover + [f"measured mean step {rs[0]['step_ms']:.2f} ms"], hoverinfo="text+name",
            text=[f"{r['ms']:.1f}" for r in rs] + [f"{rs[0]['step_ms']:.1f}"], textposition="outside",
            cliponaxis=False))
    top = max(r["step_ms"] for r in waterfall)
    fig.update_layout(title="Where the step goes (ms per step)", yaxis_title="ms", height=460,
                      yaxis_range=[0, 1.1 * top],
                      margin=dict(b=140), showlegend=len(fig.data) > 1)
    return fig


def rank_info(d):
    """Per rank (by /ranks row): rank, host, straggler flag, hover text naming the rank."""
    r = d["ranks"]
    stragglers = {s["rank"] for s in d["stragglers"]}
    hover = [f"<b>rank {rank}</b> ({esc(host)}, gpu {dev})<br>root blame {rb:.1f} ms, direct {b:.1f} ms"
             f"<br>last to arrive {100 * lf:.0f}%<br>step median {st:.2f} ms<br>waits {w:.1f} ms"
             + (f"<br>cause: {esc(c)}" if c else "")
             for rank, host, dev, rb, b, lf, st, w, c in zip(
                 r["rank"], r["host"], r["device"], r["root_blame_ms"], r["blame_ms"], r["late_fraction"],
                 r["step_ms_median"], r["wait_ms"], r["cause"])]
    return r["rank"], r["host"], [x in stragglers for x in r["rank"]], hover


def host_positions(hosts):
    """x per rank when grouped by host: the host's index, ranks spread across [-0.4, 0.4] within it."""
    names = sorted(set(hosts))
    index = {h: i for i, h in enumerate(names)}
    seen, size = {}, {h: hosts.count(h) for h in names}
    x = []
    for h in hosts:
        k = seen[h] = seen.get(h, -1) + 1
        x.append(index[h] + (0.8 * (k + 0.5) / size[h] - 0.4))
    return names, x


def fig_blame(d):
    ranks, hosts, is_s, hover = rank_info(d)
    y = d["ranks"]["root_blame_ms"]
    color = [STRAGGLER_COLOR if s else "#4c78a8" for s in is_s]
    fig = go.Figure()
    if len(ranks) <= MAX_PER_RANK:
        fig.add_trace(go.Bar(x=ranks, y=y, marker_color=color, hovertext=hover, hoverinfo="text", name="root blame"))
        fig.update_xaxes(title="rank")
        xs = ranks
    else:
        names, xs = host_positions(hosts)
        fig.add_trace(go.Scatter(x=xs, y=y, mode="markers", hovertext=hover, hoverinfo="text", name="root blame",
                                 marker=dict(color=color, size=[10 if s else 5 for s in is_s])))
        step = max(1, len(names) // 64)  # at most ~64 host labels
        fig.update_xaxes(title="host (one dot per rank)", tickvals=list(range(0, len(names), step)),
                         ticktext=[esc(n) for n in names[::step]], tickangle=-90)
    for x, yy, s, rank in zip(xs, y, is_s, ranks):
        if s:
            fig.add_annotation(x=x, y=yy, text=f"rank {rank}", font=dict(color=STRAGGLER_COLOR),
                               arrowcolor=STRAGGLER_COLOR)
    fig.update_layout(title="Blame per rank: peers' waiting charged to the rank that started each chain (ms)",
                      yaxis_title="root blame (ms)", height=430, showlegend=False, hovermode="closest")
    return fig


def fig_steps(d):
    m = d["matrices"]
    step = np.where(m["step"] > 0, m["step"], np.nan)  # 0: the rank has no such iteration
    x, ranks = m["numbers"], m["ranks"]
    fig = go.Figure()
    lo, hi = np.nanmin(step, axis=1), np.nanmax(step, axis=1)
    lo_r = [ranks[i] for i in np.nanargmin(np.nan_to_num(step, nan=np.inf), axis=1)]
    hi_r = [ranks[i] for i in np.nanargmax(np.nan_to_num(step, nan=-np.inf), axis=1)]
    fig.add_trace(go.Scatter(x=x, y=lo, mode="lines", line=dict(width=0), showlegend=False, customdata=lo_r,
                             hovertemplate="fastest: rank %{customdata}, %{y:.2f} ms<extra></extra>"))
    fig.add_trace(go.Scatter(x=x, y=hi, mode="lines", line=dict(width=0), fill="tonexty",
                             fillcolor="rgba(76,120,168,0.25)", name="fastest to slowest rank", customdata=hi_r,
                             hovertemplate="slowest: rank %{customdata}, %{y:.2f} ms<extra></extra>"))
    fig.add_trace(go.Scatter(x=x, y=m["job_step"], mode="lines+markers", name="job (median over ranks)",
                             line=dict(color="#222"), hovertemplate="job median %{y:.2f} ms<extra></extra>"))
    col = {r: i for i, r in enumerate(ranks)}
    for s in d["stragglers"][:8]:  # the most blamed few; more lines would bury the job's
        if s["rank"] in col:
            fig.add_trace(go.Scatter(x=x, y=step[:, col[s["rank"]]], mode="lines", name=f"rank {s['rank']} (straggler)",
                                     line=dict(color=STRAGGLER_COLOR, dash="dot"),
                                     hovertemplate=f"rank {s['rank']}: " + "%{y:.2f} ms<extra></extra>"))
    for c in d["change_points"]:
        fig.add_vline(x=c["iteration"], line_dash="dash", line_color="#888",
                      annotation_text=f"shift {fmt(c['before_ms'], 1)} to {fmt(c['after_ms'], 1)} ms")
    fig.update_layout(title="Step time per iteration (band: fastest to slowest rank)", yaxis_title="ms",
                      xaxis_title="iteration (first: warm-up)", height=420, hovermode="x unified")
    return fig


def host_rows(z, ranks, hosts_of):
    """Aggregate rank columns into host rows: each cell is the host's rank furthest from the job's
    median of that iteration, so one odd rank still shows (a mean would dilute it); customdata
    names that rank."""
    names = sorted(set(hosts_of.get(r, "?") for r in ranks))
    med = np.nanmedian(z, axis=1, keepdims=True)
    out, who = np.full((len(names), z.shape[0]), np.nan), np.zeros((len(names), z.shape[0]), dtype=int)
    for i, h in enumerate(names):
        cols = [j for j, r in enumerate(ranks) if hosts_of.get(r, "?") == h]
        dev = np.nan_to_num(np.abs(z[:, cols] - med), nan=-1.0)
        pick = np.argmax(dev, axis=1)
        out[i] = z[np.arange(z.shape[0]), np.array(cols)[pick]]
        who[i] = np.array(ranks)[np.array(cols)[pick]]
    return names, out, who


def heatmap_data(d, key):
    """(y labels, z: row x iteration, customdata ranks, {row: straggler label}) for one matrix, steady only."""
    m = d["matrices"]
    z = np.where(m["step"] > 0, m[key], np.nan)[1:] if len(m["numbers"]) > 1 else m[key]
    hosts_of = dict(zip(d["ranks"]["rank"], d["ranks"]["host"]))
    stragglers = [s["rank"] for s in d["stragglers"]]
    if len(m["ranks"]) <= MAX_PER_RANK:
        labels = [f"rank {r} ({esc(hosts_of.get(r, '?'))})" for r in m["ranks"]]
        who = np.tile(np.array(m["ranks"])[:, None], (1, z.shape[0]))
        marked = {i: labels[i] for i, r in enumerate(m["ranks"]) if r in stragglers}
        return labels, z.T, who, marked
    names, zz, who = host_rows(z, m["ranks"], hosts_of)
    marked = {}  # host row -> the stragglers on it
    for r in stragglers:
        if hosts_of.get(r) in names:
            row = names.index(hosts_of[r])
            marked[row] = (marked[row] + ", " if row in marked else f"{esc(names[row])}: rank ") + str(r)
    return [esc(n) for n in names], zz, who, marked


def color_top(z):
    """The colour scale's top: the 99.5th percentile, so that a few long waits (pipeline bubbles)
    do not wash out a steady straggler's pattern."""
    top = float(np.nanpercentile(z, 99.5)) if np.isfinite(z).any() else 0.0
    return top if top > 0 else 1.0  # all zero (one rank, no waits): any scale will do


def fig_heatmap(d):
    m = d["matrices"]
    x = m["numbers"][1:] if len(m["numbers"]) > 1 else m["numbers"]
    by_host = len(m["ranks"]) > MAX_PER_RANK
    views = [("wait", "exposed wait in collectives"), ("blame", "blame"), ("step", "step time")]
    data = {k: heatmap_data(d, k) for k, _ in views}
    labels, z, who, marked = data["wait"]
    # Rows are numbered (y) and named through `text`, so that hover names the rank, or the host and
    # its rank that the cell shows (customdata).
    cell = "host %{text}: rank %{customdata}" if by_host else "%{text}"
    hover = cell + "<br>iteration %{x}<br>%{z:.2f} ms<extra></extra>"
    fig = go.Figure(go.Heatmap(x=x, y=list(range(len(labels))), z=z, customdata=who, colorscale="Viridis",
                               zmin=0, zmax=color_top(z), hovertemplate=hover, text=[[lab] * len(x) for lab in labels],
                               colorbar=dict(title="ms", x=1.08)))
    buttons = [dict(label=title, method="restyle",
                    args=[{"z": [data[k][1]], "customdata": [data[k][2]], "zmax": [color_top(data[k][1])]}])
               for k, title in views]
    step = max(1, len(labels) // 48)  # at most ~48 row labels; hover names every row
    fig.update_yaxes(tickvals=list(range(0, len(labels), step)), ticktext=labels[::step], autorange="reversed")
    for i, text in marked.items():
        fig.add_annotation(x=1.0, xref="paper", xanchor="left", y=i, text=f"&#9664; {text}", showarrow=False,
                           font=dict(color=STRAGGLER_COLOR))
    fig.update_layout(title="Per iteration and " + ("host (each cell: the host's rank furthest from the job's median)"
                                                     if by_host else "rank") + " (steady iterations)",
                      xaxis_title="iteration", height=min(900, 360 + 14 * len(labels)),
                      margin=dict(r=200, t=90),
                      updatemenus=[dict(buttons=buttons, x=1.0, y=1.02, xanchor="right", yanchor="bottom")])
    return fig


def section_plots(d, figures):
    out = ["<h2 id=\"plots\">Plots</h2>",
           "<p>Zoom: drag; reset: double-click; hover names the rank. Stragglers in red.</p>"]
    out.append(figures.add(fig_blame(d), "Root blame per rank" + (" grouped by host" if len(d["ranks"]["rank"])
                                                                    > MAX_PER_RANK else "") + "."))
    m = d["matrices"]
    if m is None or not m["ranks"]:
        return "\n".join(out + ["<p>no iteration matrices: no iterations were found.</p>"])
    out.append(figures.add(fig_steps(d), "Step time: the job's median, the band between its fastest and slowest rank."))
    out.append(figures.add(fig_heatmap(d), "Exposed waits per iteration (what the waiting cost the step); "
                                           "the buttons switch to blame and step time. "
                                           "Colours saturate at the 99.5th percentile."))
    return "\n".join(out)


def section_text_report(path, scan):
    """The tool's own text report of the same file, when the binary is at hand."""
    head = "<h2 id=\"text\">Text report</h2>"
    if not scan:
        return head + "<p>not embedded: straggler-scan not found (give --scan or set STRAGGLER_SCAN).</p>"
    try:
        p = subprocess.run([scan, "report", path], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return head + f"<p>not embedded: {esc(scan_file.printable(str(e)))}</p>"
    if p.returncode != 0:
        why = scan_file.printable(p.stderr.strip()[:500])
        return head + f"<p>not embedded: straggler-scan report failed: {esc(why)}</p>"
    # Line by line, made printable as every string from the file (an older binary printed some raw).
    report = "\n".join(scan_file.printable(line) for line in p.stdout.split(b"\n"))
    return head + f"<details open><summary>straggler-scan report</summary><pre>{esc(report)}</pre></details>"


# ---------------------------------------------------------------- page

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1350px;color:#222;padding:0 1em}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ccc;margin-top:1.8em} .facts,.cmd{color:#555;margin:.2em 0}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em} th,td{border:1px solid #ddd;padding:.3em .55em;
text-align:left;vertical-align:top} th{background:#f3f3f3} table.verdict td:first-child{color:#d62728}
.healthy{color:#2a7a2a;font-weight:bold} pre{background:#f7f7f7;padding:.8em;overflow:auto;font-size:.82em}
figure{margin:1em 0} figcaption{color:#555;font-size:.9em} nav a{margin-right:1em}
"""


def find_scan(given):
    if given:
        return given
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.environ.get("STRAGGLER_SCAN"), shutil.which("straggler-scan"),
                 os.path.join(here, "..", "build", "src", "straggler-scan")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def page(d, scan):
    figures = Figures()
    body = [section_header(d),
            '<nav><a href="#verdict">verdict</a><a href="#costs">costs</a><a href="#findings">findings</a>'
            '<a href="#plots">plots</a><a href="#text">text report</a></nav>',
            section_verdict(d), section_costs(d, figures), section_findings(d), section_plots(d, figures),
            section_text_report(d["path"], scan)]
    title = f"straggler-scan: {esc(os.path.basename(d['name']))}"
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def error(name, message):
    """One line on stderr (a message may quote the file), exit status 2."""
    print(f"{name}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def main(argv):
    ap = argparse.ArgumentParser(description="One self-contained HTML page of a straggler-scan HDF5 file.")
    ap.add_argument("scan_h5")
    ap.add_argument("out_html")
    ap.add_argument("--scan", help="straggler-scan binary, for the embedded text report")
    args = ap.parse_args(argv)
    name = os.path.basename(sys.argv[0]) or "report_html.py"
    try:
        d = load(args.scan_h5)
        text = page(d, find_scan(args.scan))
    except InputError as e:
        return error(name, str(e))
    except (OSError, TypeError, ValueError, KeyError, IndexError) as e:  # the right tables, odd content
        return error(name, f"{args.scan_h5}: unexpected content ({type(e).__name__}: {e})")
    # Under a temporary name beside it (the tool's .NAME.tmp-HOST-PID rule), renamed when complete:
    # an interrupted or failed write leaves no partial page and keeps an earlier one.
    head, tail = os.path.split(args.out_html)
    tmp = os.path.join(head, f".{tail}.tmp-{socket.gethostname()}-{os.getpid()}")
    try:
        try:
            with open(tmp, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, args.out_html)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as e:
        return error(name, f"cannot write {args.out_html}: {e.strerror}")
    print(args.out_html)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
