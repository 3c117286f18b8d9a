#!/usr/bin/python3
"""Verdict matrix (issue 7): generate many straggler-sim runs across random conventions, shapes and
planted faults, analyse each with straggler-scan and check the verdict against truth.json.

Per run: every expected straggler is found with its rank, cause and onset (within 1 iteration),
and no other rank is called a straggler; expected slow links are found with the hosts truth names
(truth already names the hosts a link can be narrowed down to; Kineto runs whose file names carry no
host: found with no host named) and no others; for hang / crash the
desync rows truth requires are found (communicator, missing ranks, seq) and none that truth does not
list; a healthy run has no straggler, slow link or desync. The summary's `layout`, when not null,
equals the generated one. Every 8th run is analysed again with `--layout` given and must give the
same stragglers (rank, cause).

DP overlap (straggler-sim --dp-overlap: gradient all-reduces during the last backward): half the runs,
drawn per run from its own seed (the other runs stay as they were: they pin --no-dp-overlap). The
`ovl_crash` family is a crash with overlap forced on (checked as crash), planned after every other run
on 2x2x4, 2x4x4 and 4x2x8 with schema 3.0 / 3.25 and per-host / per-rank files pinned in turn.
--quick runs its earlier runs without overlap (as before) plus one ovl_crash per shape.

  bench/verdict_matrix.py --quick                 # ~12 runs (ctest)
  bench/verdict_matrix.py --markdown out.md       # >= 200 runs, >= 50 healthy; table to out.md
  bench/verdict_matrix.py --only crash,ovl_crash  # the crash runs (with and without overlap)
  bench/verdict_matrix.py --overlap on --sample 30  # 30 runs drawn (seeded) from those with overlap
  bench/verdict_matrix.py --format kineto --quick   # the same runs as Kineto traces (straggler-sim --format kineto)

--format kineto (default nsys) generates every run as PyTorch profiler (Kineto) Chrome-trace JSON, one file per rank,
with Kineto's own random conventions (time base, NCCL metadata, file names, event order...; src/sim/SPEC.md "Kineto
output"); the runs, faults and truth are those of the nsys matrix. Kineto writes one file per process, so the
per-host file pins of ovl_crash are left out (--schema still picks the NCCL kernel naming).
Exit status 1 when any check fails (one line per failed check, with the command that reproduces it).
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

FAULTS = ["healthy", "slow_gpu", "host_delay", "extra_work", "slow_link", "two", "three", "hang", "crash",
          "steady", "gc", "pageable", "syncs", "short", "short_slow"]
# Host-side root-cause plants (issue 18): straggler-sim's truth lists them under "findings" only; a
# plant sized to hold peers back must also be named a host_delay straggler with its detail.
HOST_PLANTS = {"gc": "gc_pause", "pageable": "excessive_h2d", "syncs": "excessive_sync"}
RANK_FAULTS = ["slow_gpu", "host_delay", "extra_work"]
# Planned after every run above (so their draws stay as they were): crash with --dp-overlap forced on.
OVL_CRASH_SHAPES, OVL_CRASH_REPS = ("2x2x4", "2x4x4", "4x2x8"), 4
# ovl_crash runs pin schema and file layout in turn, so that every combination occurs on every shape.
OVL_CRASH_PINS = [["--schema", "3.0", "--per-host-files"], ["--schema", "3.25", "--per-rank-files"],
                  ["--schema", "3.0", "--per-rank-files"], ["--schema", "3.25", "--per-host-files"]]
COLUMNS = FAULTS + ["ovl_crash"]
# shape: (layout, pinned hosts or None, iterations, approximate step time in ms)
SHAPES = {
    "1x1x8": ("1x1x8", None, 16, 57),
    "2x2x4": ("2x2x4", None, 16, 80),
    "2x4x4": ("2x4x4", 4, 16, 109),  # hosts of 8
    "4x2x8": ("4x2x8", None, 16, 86),
    "4x4x8": ("4x4x8", None, 12, 117),
    "8x4x16": ("8x4x16", None, 8, 131),
    # short captures (3 iterations: a warm-up and 2 steady) at scale
    "s256": ("4x4x16", None, 3, 131),
    "s512": ("8x4x16", None, 3, 131),
    "s1024": ("8x4x32", None, 3, 131),
    "s4096": ("8x8x64", None, 3, 131),
}


def plan(quick, seed):
    """The runs: (shape, fault) pairs in a deterministic order."""
    if quick:
        pairs = [("1x1x8", "healthy"), ("2x2x4", "slow_gpu"), ("2x4x4", "host_delay"), ("1x1x8", "extra_work"),
                 ("2x2x4", "slow_link"), ("4x2x8", "two"), ("2x2x4", "three"), ("2x4x4", "hang"),
                 ("2x2x4", "crash"), ("2x2x4", "healthy"), ("2x4x4", "slow_link"), ("4x2x8", "healthy"),
                 ("2x2x4", "steady"), ("2x4x4", "gc")]
    else:
        pairs = []
        for rep in range(13):
            for shape in ("1x1x8", "2x2x4", "2x4x4", "4x2x8"):
                for fault in FAULTS:
                    if fault == "healthy" or rep < 5:
                        pairs.append((shape, fault))
        pairs += [("4x4x8", f) for f in FAULTS if not f.startswith("short")]
        pairs += [("8x4x16", "three"), ("8x4x16", "crash")]
        pairs = [(sh, f) for sh, f in pairs if not f.startswith("short")]
        pairs += [(sh, "short") for sh in ("s256", "s256", "s512", "s512", "s1024", "s4096")]
        # A slow GPU (1.3-1.4x) in both steady iterations of a short capture at scale: far enough
        # above its peers to be named (consistency.hpp: how high counts, not only how often).
        pairs += [(sh, "short_slow") for sh in ("s256", "s512", "s1024", "s4096")]
    pairs += [(sh, "ovl_crash") for _ in range(1 if quick else OVL_CRASH_REPS) for sh in OVL_CRASH_SHAPES]
    rng = random.Random(seed)
    runs = [make_run(i, shape, fault, rng) for i, (shape, fault) in enumerate(pairs)]
    if quick:  # the ctest stays the regression gate it was: only ovl_crash runs with overlap there
        for r in runs:
            r["dp_overlap"] = r["fault"] == "ovl_crash"
    ovl = [r for r in runs if r["fault"] == "ovl_crash"]
    for k, r in enumerate(ovl):
        r["pin"] = OVL_CRASH_PINS[(k // len(OVL_CRASH_SHAPES)) % len(OVL_CRASH_PINS)]
    return runs


def make_run(idx, shape, fault, rng):
    layout, hosts, iters, step = SHAPES[shape]
    tp, pp, dp = (int(x) for x in layout.split("x"))
    world = tp * pp * dp
    lo, hi = max(2, iters // 3), max(3, (2 * iters) // 3)
    run = {"idx": idx, "shape": shape, "fault": fault, "layout": layout, "hosts": hosts, "iterations": iters,
           "world": world, "seed": rng.randrange(1, 10**6), "cseed": rng.randrange(1, 10**6),
           "clock_ms": round(rng.uniform(0, 3), 2), "rerun_layout": idx % 8 == 0}
    specs = []
    kinds = {"two": rng.sample(RANK_FAULTS, 2), "three": list(RANK_FAULTS), "ovl_crash": ["crash"]}.get(fault, [fault])
    ranks = rng.sample(range(world), len(kinds))
    for kind, r in zip(kinds, ranks):
        onset = rng.randint(lo, hi)
        if kind == "short_slow":
            specs.append(f"slow_gpu:{r}:1:{rng.uniform(1.3, 1.4):.2f}")
        elif kind == "slow_gpu":
            specs.append(f"slow_gpu:{r}:{onset}:{rng.uniform(1.25, 1.4):.2f}")
        elif kind == "extra_work":
            specs.append(f"extra_work:{r}:{onset}:{rng.uniform(1.3, 1.4):.2f}")
        elif kind == "host_delay":  # 10-18% of the step time, i.e. 8-14 ms on 80 ms steps
            specs.append(f"host_delay:{r}:{onset}:{round(step * rng.uniform(0.10, 0.18) * 2) / 2:g}")
        elif kind in ("hang", "crash"):
            specs.append(f"{kind}:{r}:{onset}")
        elif kind == "slow_link":
            specs.append(slow_link_spec(run, rng))
    run["expect_extra"] = []
    if fault in ("steady",) + tuple(HOST_PLANTS):
        specs, r = [], ranks[0]
        onset = 1
        if fault == "steady":  # a small steady host delay: 2-3% of the step
            onset = rng.randint(lo, hi)
            specs.append(f"host_delay:{r}:{onset}:{step * rng.uniform(0.02, 0.03):.2f}")
        elif fault == "gc":  # a GC pause of 15-25% of the step every 1-3 iterations; the first in 1 + floor(0.4 every)
            every = rng.choice([1, 2, 3])
            onset = 1 + int(0.4 * every)
            specs.append(f"gc_pause:{r}:{every}:{step * rng.uniform(0.15, 0.25):.1f}")
        elif fault == "pageable":  # extra H2D copies before each forward: 10-15% of the step at ~24 GB/s
            mib = step * rng.uniform(0.10, 0.15) * 1e-3 * 24e9 / (4 * 2**20)
            specs.append(f"h2d:{r}:{mib:.0f}")
        else:  # .item() after every layer: M x 2 x L = 32 syncs per iteration, 10-15% of the step in all
            specs.append(f"sync:{r}:{step * rng.uniform(0.10, 0.15) / 32:.2f}")
        if fault != "steady":
            run["expect_extra"].append({"rank": r, "cause": "host_delay", "onset_iteration": onset,
                                        "detail": HOST_PLANTS[fault]})
    # Realistic noise (straggler-sim --noise): every healthy and short run, half of the others.
    run["noise"] = None
    if fault in ("healthy", "short", "short_slow") or rng.random() < 0.5:
        run["noise"] = (f"{rng.uniform(0.05, 0.2):.3f}:{rng.uniform(0.5, 3):.2f}:"
                        f"{rng.uniform(0.005, 0.015):.4f}:{rng.uniform(0, 0.02):.4f}")
    run["specs"] = specs
    # DP overlap: from the run's own stream (the shared rng is not drawn: the next runs stay as they were).
    run["dp_overlap"] = fault == "ovl_crash" or random.Random(f"dp-overlap:{run['seed']}:{idx}").random() < 0.5
    run["pin"] = []
    return run


def slow_link_spec(run, rng):
    min_hosts = max(2, run["hosts"] or run["world"] // 8)
    if rng.random() < 0.5:
        a = b = rng.randrange(min_hosts)
    else:
        a, b = sorted(rng.sample(range(min_hosts), 2))
    return f"slow_link:{a}:{b}:{rng.uniform(2.0, 3.0):.2f}"


def sim_cmd(a, run, out_dir):
    cmd = [a.sim_bin, out_dir, "--layout", run["layout"], "--iterations", str(run["iterations"]),
           "--seed", str(run["seed"]), "--conventions", "random", "--conventions-seed", str(run["cseed"]),
           "--clock-offset-ms", str(run["clock_ms"]), "--threads", "1"] + (["--format", "kineto"] if a.format == "kineto" else [])
    if run["hosts"]:
        cmd += ["--hosts", str(run["hosts"])]
    if run.get("noise"):
        cmd += ["--noise", run["noise"]]
    pins = run.get("pin", [])
    if a.format == "kineto":  # one trace per process: no file layout to pin
        pins = [x for x in pins if x not in ("--per-host-files", "--per-rank-files")]
    cmd += ["--dp-overlap" if run.get("dp_overlap") else "--no-dp-overlap"] + pins
    for s in run["specs"]:
        cmd += ["--fault", s]
    return cmd


def scan_cmd(a, run_dir, summary, h5, layout=None):
    cmd = [a.scan_bin, run_dir, "--summary", summary, "-o", h5]
    return cmd + (["--layout", layout] if layout else [])


def report_check(a, summary, h5, res):
    """`straggler-scan report` on the scan's HDF5, alone and with 3 processes: the same summary, byte
    for byte (issue 19)."""
    for np_ in (1, 3):
        again = summary + f".report{np_}.json"
        launcher = [] if np_ == 1 else ["mpirun", "--oversubscribe", "-n", str(np_)]
        rc, err = sh(launcher + [a.scan_bin, "report", h5, "-q", "--summary", again])
        if rc != 0:
            res["msgs"].append(f"report (-n {np_}) exit {rc}: {err[0]}")
        elif open(again, "rb").read() != open(summary, "rb").read():
            res["msgs"].append(f"report (-n {np_}): the summary differs from the scan's")


def sh(cmd, timeout=900):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    return p.returncode, (p.stderr or p.stdout).strip().splitlines()[-1:] or [""]


def convention_class(truth):
    c = truth.get("conventions") or {}
    if c.get("format") == "kineto":
        return "kineto-{}+{}".format("2024" if c.get("time_base") == "relative_float_us" else "2023",
                                     "markers" if c.get("iteration_markers") else "no-markers")
    return "{}+{}".format("host-files" if c.get("file_layout") == "per_host" else "rank-files",
                          "markers" if c.get("iteration_markers") else "no-markers")


def convention_choices(truth):
    c = truth.get("conventions") or {}
    graphs = any(r.get("graph_launches", 0) > 0 for r in c.get("ranks", []))
    return {"schema " + str(c.get("schema", truth.get("schema"))), "gpus/host " + str(c.get("gpus_per_host")),
            "files " + str(c.get("file_layout")), "markers " + ("yes" if c.get("iteration_markers") else "no"),
            "cuda graphs " + ("on some ranks" if graphs else "none"),
            "device ids " + str(c.get("device_ids")), "pids " + str(c.get("pids")),
            "p2p streams " + str(c.get("p2p_streams")), "dp overlap " + ("yes" if c.get("dp_overlap") else "no")} | (
        {"kineto time " + str(c.get("time_base")), "kineto nccl metadata " + ("yes" if c.get("nccl_metadata") else "no"),
         "kineto order " + str(c.get("event_order")), "kineto names " + str(c.get("file_naming")) + (".gz" if c.get("gzip") else "")}
        if c.get("format") == "kineto" else set())


def step_offset(truth):
    """Iterations are numbered by their ProfilerStep#N markers where a trace has them (docs/hdf5-layout.md
    `number`); a Kineto run's markers start at the offset its conventions record, truth counts from 0."""
    c = truth.get("conventions") or {}
    return c.get("profiler_step_offset", 0) if c.get("format") == "kineto" and c.get("iteration_markers") else 0


def shifted(truth, extra, k):
    """truth and the run's extra expectations with every straggler onset moved by k iterations."""
    if not k:
        return truth, extra
    t = json.loads(json.dumps(truth))
    for e in t["expected"].get("stragglers", []):
        e["onset_iteration"] += k
    return t, [dict(e, onset_iteration=e["onset_iteration"] + k) for e in extra]


def comm_base(name):
    return name.split(":")[0]


def check(truth, s, extra=()):
    """Compares a summary with truth (and the run's host-side plants, `extra`): (found, missed,
    false, failure messages)."""
    exp = truth["expected"]
    found = missed = false = 0
    msgs = []
    # Stragglers: rank, cause (and detail for host-side plants), onset within 1; any other rank is a
    # false one.
    rep = {r["rank"]: r for r in s.get("stragglers") or []}
    for e in list(exp.get("stragglers", [])) + list(extra):
        r = rep.get(e["rank"])
        if r and r.get("cause") == e["cause"] and r.get("onset_iteration") is not None \
                and abs(r["onset_iteration"] - e["onset_iteration"]) <= 1 \
                and e.get("detail") in (None, r.get("cause_detail")):
            found += 1
            continue
        missed += 1
        got = "not reported" if not r else \
            f"reported as {r.get('cause')} ({r.get('cause_detail')}) onset {r.get('onset_iteration')}"
        msgs.append(f"missed straggler rank {e['rank']} {e['cause']} ({e.get('detail')}) onset {e['onset_iteration']}: {got}")
    expected_ranks = {e["rank"] for e in list(exp.get("stragglers", [])) + list(extra)}
    for rank, r in rep.items():
        if rank not in expected_ranks:
            false += 1
            msgs.append(f"false straggler rank {rank} {r.get('cause')} onset {r.get('onset_iteration')}")
    # Slow links: the hosts truth names (it names what cannot be narrowed further).
    reported = [frozenset(x.get("hosts") or []) for x in s.get("slow_links") or []]
    expected = [frozenset(x["hosts"]) for x in exp.get("slow_links", [])]
    conv = truth.get("conventions") or {}
    if conv.get("format") == "kineto" and conv.get("file_naming") != "host_pid":
        # A PyTorch trace names no host; only tensorboard's <host>_<pid> file names do. Without them
        # no reader can name the link's hosts: it must still be found, with its hosts unknown.
        expected = [frozenset() for _ in expected]
    for e in expected:
        if e in reported:
            found += 1
        else:
            missed += 1
            msgs.append(f"missed slow link {sorted(e)}: reported {[sorted(x) for x in reported]}")
    for x in reported:
        if x not in expected:
            false += 1
            msgs.append(f"false slow link {sorted(x)}")
    # Desync: hang lists every first missing op; crash marks the rows of the crashed rank root_cause.
    tdes = exp.get("desync", [])
    rdes = s.get("desync") or []
    crash = bool(exp.get("root_cause"))
    need = [d for d in tdes if not crash or d.get("root_cause")]
    ok_all = True
    for d in need:
        same = [r for r in rdes if comm_base(r.get("communicator", "")) == comm_base(d["communicator"])
                and sorted(r.get("missing_ranks") or []) == sorted(d["missing_ranks"])]
        if not same:
            ok_all = False
            msgs.append(f"missed desync {d['communicator']} seq {d['seq']} missing {d['missing_ranks']}")
        elif not any(r.get("group_seq", r.get("seq")) == d["seq"] and
                     ("link_seq" not in d or r.get("seq") == d["link_seq"]) for r in same):
            ok_all = False
            msgs.append(f"desync {d['communicator']} missing {d['missing_ranks']}: seq {d['seq']} expected, "
                        f"reported {[(r.get('seq'), r.get('group_seq')) for r in same]}")
    for rc in exp.get("root_cause", []):
        if not any(rc["rank"] in (r.get("missing_ranks") or []) for r in rdes):
            ok_all = False
            msgs.append(f"crashed rank {rc['rank']} named missing in no desync row")
    if need:
        found, missed = (found + 1, missed) if ok_all else (found, missed + 1)
    for r in rdes:
        if not any(comm_base(r.get("communicator", "")) == comm_base(d["communicator"])
                   and sorted(r.get("missing_ranks") or []) == sorted(d["missing_ranks"]) for d in tdes):
            false += 1
            msgs.append(f"false desync {r.get('communicator')} seq {r.get('seq')} missing {r.get('missing_ranks')}")
    return found, missed, false, msgs


def pipeline_msgs(truth, s, extra=()):
    """The pipeline verdict against the generator's true bubble (docs/pipeline.md): schedule facts,
    the bubble within 2 points, and no cause named where the run planted none that acts on the
    pipeline (a straggler: any the run expects, host-side plants included). Runs that stop (hang,
    crash), captures of fewer than 4 steady iterations and runs without PP are not checked."""
    t = truth["expected"].get("pipeline")
    if not t or t.get("iterations", 0) < 4 or truth["expected"].get("root_cause") or truth["expected"].get("desync"):
        return None, []
    p = s.get("pipeline")
    if not p:
        return False, ["pipeline: not measured (null)"]
    msgs = []
    for k in ("microbatches", "virtual_stages", "schedule"):
        if p.get(k) != t.get(k):
            msgs.append(f"pipeline: {k} {p.get(k)}, generated {t.get(k)}")
    if abs(p["bubble_measured"] - t["bubble_measured"]) > 0.02:
        msgs.append(f"pipeline: bubble {p['bubble_measured']:.4f}, true {t['bubble_measured']:.4f}")
    planted = set(t.get("causes") or [])
    if truth["expected"].get("stragglers") or list(extra):
        planted.add("straggler")
    for c in p.get("causes") or []:
        if c in ("stage_imbalance", "straggler") and c not in planted:
            msgs.append(f"pipeline: false cause {c} (planted {sorted(planted)})")
    return not msgs, msgs


def waterfall_msgs(s):
    """The waterfall of every phase adds up to its step within 1% (docs/waterfall.md); returns
    (messages, the largest |waiting| share: what the parts leave unexplained)."""
    msgs, worst = [], 0.0
    for ph in s.get("waterfall") or []:
        total = sum(p["ms"] for p in ph["parts"])
        if abs(total - ph["step_ms"]) > 0.01 * ph["step_ms"]:
            msgs.append(f"waterfall of iterations {ph['from_iteration']}-{ph['to_iteration']} adds up to {total:.2f} ms, "
                        f"not its step {ph['step_ms']:.2f} ms")
        worst = max([worst] + [abs(p["share"]) for p in ph["parts"] if p["part"] == "waiting"])
    return msgs, worst


def layout_ok(truth, s):
    lay = s.get("layout")
    if not lay:
        return True, "null"
    t = truth["layout"]
    orders = {"tp-dp-pp"} | ({"tp-pp-dp"} if t["pp"] == 1 or t["dp"] == 1 else set())
    ok = (lay.get("tp"), lay.get("pp"), lay.get("dp")) == (t["tp"], t["pp"], t["dp"]) and lay.get("order") in orders
    return ok, f"{lay.get('tp')}x{lay.get('pp')}x{lay.get('dp')} {lay.get('order')}"


def execute(a, run):
    """Generates, analyses and checks one run; returns a result dict."""
    t0 = time.time()
    base = tempfile.mkdtemp(prefix=f"vm{run['idx']:03d}-", dir=a.workdir)
    d = os.path.join(base, "run")
    res = {"run": run, "found": 0, "missed": 0, "false": 0, "msgs": [], "unobservable": 0, "layout": None, "pipeline": None}
    try:
        for attempt in range(4):  # slow links: re-draw until truth calls one observable
            shutil.rmtree(d, ignore_errors=True)
            rc, err = sh(sim_cmd(a, run, d))
            if rc != 0:
                res["msgs"].append(f"straggler-sim exit {rc}: {err[0]}")
                return res
            with open(os.path.join(d, "truth.json")) as f:
                truth = json.load(f)
            if run["fault"] != "slow_link" or truth["expected"]["slow_links"] or attempt == 3:
                break
            rng = random.Random(run["seed"] + attempt)
            run["cseed"] = rng.randrange(1, 10**6)
            run["specs"] = [slow_link_spec(run, rng)]
        if run["fault"] == "slow_link" and not truth["expected"]["slow_links"]:
            res["unobservable"] = 1
        res["conv"] = convention_class(truth)
        res["choices"] = convention_choices(truth)
        summary, h5 = os.path.join(base, "s.json"), os.path.join(base, "o.h5")
        rc, err = sh(scan_cmd(a, d, summary, h5))
        if rc != 0:
            res["msgs"].append(f"straggler-scan exit {rc}: {err[0]}")
            return res
        if a.report_check:
            report_check(a, summary, h5, res)
        with open(summary) as f:
            s = json.load(f)
        t_ex, extra = shifted(truth, list(run.get("expect_extra", ())), step_offset(truth))
        res["found"], res["missed"], res["false"], msgs = check(t_ex, s, extra)
        ev = s.get("straggler_evidence") or {}
        res["judged"] = ev.get("judged", True)
        if run["fault"] == "short_slow" and not res["judged"] and ev.get("steady_iterations", 0) < 2:
            # Without step markers a 3-iteration capture has 2 complete repeating units (the last
            # one has no closing boundary): one steady unit, and the tool says it cannot judge.
            res["unobservable"], res["missed"] = 1, max(0, res["missed"] - 1)
            msgs = [m for m in msgs if not m.startswith("missed straggler")]
        res["msgs"] += msgs
        res["pipeline"], pmsgs = pipeline_msgs(truth, s, run.get("expect_extra", ()))
        res["msgs"] += pmsgs
        wmsgs, res["waiting_share"] = waterfall_msgs(s)
        res["msgs"] += wmsgs
        ok, desc = layout_ok(truth, s)
        res["layout"] = desc
        if not ok:
            res["msgs"].append(f"layout {desc} (source {s['layout'].get('source')}), generated {run['layout']} tp-dp-pp")
        if run["rerun_layout"]:
            summary2 = os.path.join(base, "s2.json")
            rc, err = sh(scan_cmd(a, d, summary2, os.path.join(base, "o2.h5"), run["layout"]))
            if rc != 0:
                res["msgs"].append(f"straggler-scan --layout {run['layout']} exit {rc}: {err[0]}")
            else:
                with open(summary2) as f:
                    s2 = json.load(f)
                v1 = sorted((x["rank"], x["cause"]) for x in s.get("stragglers") or [])
                v2 = sorted((x["rank"], x["cause"]) for x in s2.get("stragglers") or [])
                res["rerun"] = v1 == v2
                if v1 != v2:
                    res["msgs"].append(f"--layout {run['layout']} changes the stragglers: {v1} -> {v2}")
        return res
    except Exception as e:  # a broken summary or truth is a failed check, not a crash of the matrix
        res["msgs"].append(f"error: {type(e).__name__}: {e}")
        return res
    finally:
        res["seconds"] = time.time() - t0
        if res["msgs"] and a.keep_failed:
            res["kept"] = base
        else:
            shutil.rmtree(base, ignore_errors=True)


def reproduce(a, run):
    d = f"/tmp/vm-repro-{run['idx']}"
    cmd = " ".join(shlex.quote(x) for x in sim_cmd(a, run, d))
    scan = f"{shlex.quote(a.scan_bin)} {d} --summary {d}.json -o {d}.h5"
    again = f" && {scan.replace('.json', '-given.json').replace('.h5', '-given.h5')} --layout {run['layout']}"
    return f"rm -rf {d} && {cmd} && {scan}" + (again if run["rerun_layout"] else "")


def markdown(a, results, elapsed, argv):
    shapes = [s for s in SHAPES if any(r["run"]["shape"] == s for r in results)]
    convs = sorted({r.get("conv", "?") for r in results})
    lines = [f"## Verdict matrix (issue 7)", "",
             f"Date: {datetime.date.today().isoformat()}. Command: `{' '.join(argv)}` "
             f"({len(results)} runs, {elapsed / 60:.1f} min wall on this machine, {a.jobs} at a time).", "",
             "Each cell: runs: found / missed / false, over the planted faults truth calls observable "
             "(a straggler's rank, cause and onset within 1 iteration; a slow link's hosts; for hang and "
             "crash the desync rows of the missing rank, one per run). `healthy` counts false reports only. "
             "Convention: file layout and step markers as drawn by `--conventions random` (the other "
             "choices are tallied below).", "",
             "| shape | convention | " + " | ".join(COLUMNS) + " |", "|---|---|" + "---|" * len(COLUMNS)]
    for shape in shapes:
        for conv in convs:
            rows = [r for r in results if r["run"]["shape"] == shape and r.get("conv", "?") == conv]
            if not rows:
                continue
            cells = []
            for fault in COLUMNS:
                rs = [r for r in rows if r["run"]["fault"] == fault]
                if not rs:
                    cells.append("")
                    continue
                f, m, x = (sum(r[k] for r in rs) for k in ("found", "missed", "false"))
                bad = sum(1 for r in rs if r["msgs"])
                cell = f"{len(rs)}: " + (f"- / - / {x}" if fault == "healthy" else f"{f} / {m} / {x}")
                cells.append(f"**{cell}**" if bad else cell)
            lines.append(f"| {shape} | {conv} | " + " | ".join(cells) + " |")
    lines += ["", "Bold: a cell with a failed check (also layout or `--layout` re-run checks).", ""]
    lines += totals(results).splitlines()
    choice_runs, choice_bad = {}, {}
    for r in results:
        for c in r.get("choices", ()):
            choice_runs[c] = choice_runs.get(c, 0) + 1
            choice_bad[c] = choice_bad.get(c, 0) + (1 if r["msgs"] else 0)
    lines += ["", "| convention choice | runs | failing runs |", "|---|---|---|"]
    lines += [f"| {c} | {choice_runs[c]} | {choice_bad[c]} |" for c in sorted(choice_runs)]
    return "\n".join(lines) + "\n"


def totals(results):
    T = {k: sum(r[k] for r in results) for k in ("found", "missed", "false", "unobservable")}
    healthy = [r for r in results if r["run"]["fault"] == "healthy"]
    clean = sum(1 for r in healthy if not r["msgs"])
    reruns = [r for r in results if "rerun" in r]
    lay_null = sum(1 for r in results if r["layout"] == "null")
    lay_bad = sum(1 for r in results if any(m.startswith("layout ") for m in r["msgs"]))
    bad = sum(1 for r in results if r["msgs"])
    return (f"Totals: {len(results)} runs, {bad} failing. Planted faults found {T['found']}, missed {T['missed']}; "
            f"false reports {T['false']}. Healthy runs clean: {clean} of {len(healthy)}. Slow-link runs truth "
            f"calls unobservable (checked for false reports only): {T['unobservable']}. Layout: "
            f"{len(results) - lay_null - lay_bad} equal to the generated one, {lay_bad} different, {lay_null} null. "
            f"`--layout` re-runs with the same stragglers: {sum(1 for r in reruns if r['rerun'])} of {len(reruns)}. "
            f"Pipeline bubble as generated (within 2 points, schedule facts, no false cause): "
            f"{sum(1 for r in results if r.get('pipeline') is True)} of "
            f"{sum(1 for r in results if r.get('pipeline') is not None)} runs checked. Waterfall adds up in every "
            f"phase: {sum(1 for r in results if 'waiting_share' in r and not any(m.startswith('waterfall') for m in r['msgs']))} "
            f"of {sum(1 for r in results if 'waiting_share' in r)} runs; the largest share left to waiting "
            f"{100 * max([r.get('waiting_share', 0) for r in results] + [0]):.1f}%.")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="about 12 runs of small shapes (ctest)")
    p.add_argument("--markdown", metavar="FILE", help="write the table (a RESULTS.md section) to FILE")
    build = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build")
    p.add_argument("--scan-bin", default=os.environ.get("SS_SCAN_BIN", os.path.join(build, "src/straggler-scan")))
    p.add_argument("--sim-bin", default=os.environ.get("SS_SIM_BIN", os.path.join(build, "src/sim/straggler-sim")))
    p.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    p.add_argument("--seed", type=int, default=7, help="seed of the run plan (default 7)")
    p.add_argument("--only", metavar="SHAPE/FAULT", help="only runs of this shape, fault or shape/fault (comma-separated: any of them)")
    p.add_argument("--overlap", choices=("any", "on", "off"), default="any", help="only runs with (on) or without (off) DP overlap")
    p.add_argument("--sample", type=int, metavar="N", help="then N of the selected runs, drawn with --seed")
    p.add_argument("--runs", metavar="I,J,...", help="only the runs of these indexes (as printed)")
    p.add_argument("--workdir", default=tempfile.gettempdir(), help="where runs are generated (deleted after)")
    p.add_argument("--keep-failed", action="store_true", help="keep the folders of failing runs")
    p.add_argument("--format", choices=("nsys", "kineto"), default="nsys",
                   help="what straggler-sim writes: nsys SQLite exports (default) or Kineto traces")
    p.add_argument("--report-check", action="store_true",
                   help="also run `straggler-scan report` on each scan's HDF5 (1 and 3 processes) and compare the summaries")
    a = p.parse_args()
    for b in (a.scan_bin, a.sim_bin):
        if not os.access(b, os.X_OK):
            sys.exit(f"verdict_matrix: {b} is not an executable (build first, or --scan-bin/--sim-bin)")
    runs = plan(a.quick, a.seed)
    if a.only:
        keys = set(a.only.split(","))
        runs = [r for r in runs if keys & {r["shape"], r["fault"], f"{r['shape']}/{r['fault']}"}]
    if a.overlap != "any":
        runs = [r for r in runs if r["dp_overlap"] == (a.overlap == "on")]
    if a.sample is not None and a.sample < len(runs):
        runs = sorted(random.Random(a.seed).sample(runs, a.sample), key=lambda r: r["idx"])
    if a.runs:
        runs = [r for r in runs if r["idx"] in {int(x) for x in a.runs.split(",")}]
    print(f"verdict_matrix: {len(runs)} runs ({sum(r['fault'] == 'healthy' for r in runs)} healthy), "
          f"{a.jobs} at a time", flush=True)
    t0, done, lock, results = time.time(), [0], threading.Lock(), []

    def one(run):
        res = execute(a, run)
        with lock:
            done[0] += 1
            status = "ok" if not res["msgs"] else f"FAIL ({len(res['msgs'])})"
            print(f"[{done[0]:3d}/{len(runs)}] run {run['idx']:3d} {run['shape']:>6} {run['fault']:<10} "
                  f"{res.get('conv', '?'):<22} {status} {res['seconds']:.1f} s", flush=True)
        return res

    # The largest runs first, so that they overlap with the small ones.
    order = sorted(runs, key=lambda r: -r["world"] * r["iterations"])
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        results = list(ex.map(one, order))
    results.sort(key=lambda r: r["run"]["idx"])
    elapsed = time.time() - t0
    failed = [r for r in results if r["msgs"]]
    for r in failed:
        run = r["run"]
        for m in r["msgs"]:
            print(f"FAIL run {run['idx']} [{run['shape']} {run['fault']} {r.get('conv', '?')}] {m} | "
                  f"reproduce: {reproduce(a, run)}" + (f" (kept in {r['kept']})" if r.get("kept") else ""))
    print(totals(results))
    print(f"verdict_matrix: {len(results)} runs in {elapsed:.0f} s, {len(failed)} failing")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(markdown(a, results, elapsed, ["bench/verdict_matrix.py"] + sys.argv[1:]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
