#!/usr/bin/python3
"""Semantic fuzzer: input that is well-formed but wrong (tests/fuzz/SEMANTIC_FUZZ.md).

Each case generates a small clean run (straggler-sim, or the independent simulator tests/indep/indep_sim.py
for a share of the cases; nsys SQLite or Kineto JSON) with a planted fault or none, scans it, applies ONE
semantic mutation (duplicated events, impossible durations, a missing or garbled ProfilerStep marker,
one host's clock far off, a rank of another job, an empty or unreadable trace file), scans again and
judges the pair: straggler-scan must say what is wrong in one line naming the file or rank, and keep
the verdict of the clean run where the family promises it. Cases are seeded: case I of --seed S is
always the same; failures are saved once per signature under WORKDIR/findings/<signature>/case.json.

  fuzz_semantic.py --scan BIN --sim BIN --workdir DIR [--seed S] (--cases N | --minutes M | --quick)
                   [--families a,b] [--format nsys|kineto|both] [--case I] [--replay CASE.json] [--keep]
Exit status: 0 when no case failed, 1 when some did, 2 for bad arguments.
"""
import argparse
import collections
import copy
import gzip
import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
INDEP = os.path.join(ROOT, "tests", "indep", "indep_sim.py")
PY = "/usr/bin/python3"
SAN_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "ERROR: UndefinedBehaviorSanitizer",
               "AddressSanitizer:DEADLYSIGNAL", "ERROR: ThreadSanitizer")
MEM_LIMIT = 4 << 30

# family -> weight (out of 100) when all are drawn
FAMILIES = {"duplicates": 20, "durations": 20, "marker": 18, "clock": 16, "other_job": 14, "empty": 12}
LAYOUTS = {8: ["2x2x2", "1x2x4", "2x1x4", "1x1x8"], 16: ["2x2x4", "2x4x2", "4x2x2", "2x1x8", "1x2x8"]}
INDEP_LAYOUTS = {8: ["2x2x2", "1x2x4", "2x1x4", "1x1x8"], 16: ["2x2x4", "4x2x2", "2x1x8", "1x2x8"]}  # PP 4 takes it 4-17 s
# A second mutation (in SECOND_SHARE of the cases) only from the families that promise the clean verdict.
SECOND_SHARE = 0.15
SECOND_FAMILIES = ["duplicates", "durations", "marker", "clock"]
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")


class CaseError(Exception):
    """The case could not be built (a generator failed, nothing to mutate): reported, not a finding."""


# ---------------------------------------------------------------------------------------------------
# Drawing a case (a pure function of seed, index and the options): the recipe saved in case.json.

def draw_base(rng, fmt, gen=None, ranks=None, layout=None):
    """A small run: 8 or 16 ranks, 6-20 iterations, a planted fault (or none)."""
    gen = gen or ("indep" if rng.random() < 0.25 else "sim")
    ranks = ranks or rng.choice([8, 16])
    layout = layout or rng.choice((INDEP_LAYOUTS if gen == "indep" else LAYOUTS)[ranks])
    tp, pp, dp = (int(x) for x in layout.split("x"))
    hosts = 2 if ranks == 8 else rng.choice([2, 4])
    iters = rng.choice([6, 6, 8, 10, 12, 16, 20])
    layers, micro = rng.choice([1, 2]), max(rng.choice([2, 4]), pp)
    if gen == "indep":  # its replay is Python: keep it near a second
        iters, layers, micro = min(iters, 12), 1, max(2, pp)
    base = {"gen": gen, "format": fmt, "layout": layout, "ranks": ranks, "hosts": hosts, "iterations": iters,
            "layers": layers, "microbatches": micro,
            "seed": rng.randint(1, 5000),  # indep_sim: its epoch grows a day per seed; under 2^61 ns (year 2043) up to ~6000
            "fault": None, "per_host_files": False}
    kind = rng.choices(["none", "slow_gpu", "host_delay", "extra_work", "slow_link"], [20, 35, 20, 15, 10])[0]
    rank = rng.randrange(ranks)
    onset = rng.randint(2, max(2, iters // 2))
    if kind in ("slow_gpu", "extra_work"):
        base["fault"] = f"{kind}:{rank}:{onset}:{rng.choice([1.3, 1.35, 1.4, 1.5])}"
    elif kind == "host_delay":
        base["fault"] = f"host_delay:{rank}:{onset}:{rng.choice([10, 15, 20, 25])}"
    elif kind == "slow_link":
        base["fault"] = f"slow_link:0:1:{rng.choice([2, 3])}"  # hosts by index (sim), by index too (indep)
    return base


def planted_rank(base):
    f = base.get("fault") or ""
    parts = f.split(":")
    return int(parts[1]) if parts[0] in ("slow_gpu", "host_delay", "extra_work") else None


def pick(rng, items):
    return rng.choice(list(items))


def draw_duplicates(rng, base, second=False):
    if base["format"] == "nsys":
        variants = ["kernels_all", "kernels_some", "runtime_all", "kernels_runtime", "nvtx_all", "markers", "whole"]
        m = {"variant": pick(rng, variants)}
        if base["gen"] == "sim" and rng.random() < 0.3 and not second:
            base["per_host_files"] = True
            m["variant"] = pick(rng, ["kernels_all", "kernels_some", "kernels_pid", "whole"])
            m["host"] = rng.randrange(base["hosts"])
        else:
            m["rank"] = rng.randrange(base["ranks"])
    else:
        m = {"variant": pick(rng, ["kernels_all", "kernels_some", "runtime_all", "kernels_runtime", "annotations",
                                   "markers", "whole"]),
             "rank": rng.randrange(base["ranks"]), "position": pick(rng, ["append", "adjacent"])}
    m["fraction"] = pick(rng, [0.01, 0.05, 0.2, 0.5])  # for *_some
    m["pick_seed"] = rng.randint(1, 1 << 30)
    return m


def draw_durations(rng, base, second=False):
    m = {"rank": rng.randrange(base["ranks"]), "amount": pick(rng, ["few", "few", "all"]),
         "pick_seed": rng.randint(1, 1 << 30)}
    if second:
        m["amount"] = "few"
    if base["format"] == "nsys":
        m["variant"] = pick(rng, ["end_before_start", "end_far"])
        m["value"] = rng.randint(1, 10 ** 6) if m["variant"] == "end_before_start" else pick(rng, [10 ** 13, 10 ** 15, 1 << 62])
    else:
        m["variant"] = pick(rng, ["dur_-1", "dur_nan", "dur_0", "dur_1e15", "dur_string"])
        m["value"] = {"dur_-1": -1, "dur_nan": "NaN", "dur_0": 0, "dur_1e15": 1e15,
                      "dur_string": pick(rng, ["n/a", ""])}[m["variant"]]
    return m


def draw_marker(rng, base, second=False):
    m = {"rank": rng.randrange(base["ranks"]), "where": pick(rng, ["start", "middle", "end"]),
         "action": pick(rng, ["remove", "remove", "rename"]), "pick_seed": rng.randint(1, 1 << 30)}
    if m["action"] == "rename":
        m["text"] = pick(rng, ["ProfilerStep#", "ProfilerStep#x", "ProfilerStep#N\ud800", "", "ProfilerStep#N\x01"])
    m["variant"] = f"{m['action']}_{m['where']}"
    return m


def draw_clock(rng, base, second=False):
    ms = int(round(math.exp(rng.uniform(math.log(30), math.log(2000)))))
    m = {"offset_ms": ms * rng.choice([1, -1]), "host": rng.randrange(base["hosts"])}
    m["variant"] = pick(rng, ["edit", "edit", "knob"])
    if second:
        m["variant"] = "edit"  # a regenerated run would undo the first mutation
    if m["variant"] == "knob":
        m["offset_ms"] = abs(m["offset_ms"])  # the generators draw the per-host errors within +-X
    if (base["format"] == "nsys" and base["gen"] == "sim" and m["variant"] == "edit" and rng.random() < 0.3
            and not second):
        base["per_host_files"] = True
        m["variant"] = "edit_per_host_file"
    return m


def draw_other_job(rng, base, second=False):
    planted = planted_rank(base)
    victims = [r for r in range(base["ranks"]) if r != planted]
    m = {"rank": rng.choice(victims)}
    variants = ["other_layout", "other_seed", "other_iters"]
    if base["format"] == "kineto":
        variants += ["claim_beyond"] + (["foreign_rank"] if base["ranks"] == 8 else [])
    m["variant"] = pick(rng, variants)
    if m["variant"] in ("other_layout", "foreign_rank"):
        ranks = 16 if m["variant"] == "foreign_rank" or base["ranks"] == 8 else rng.choice([8, 16])
        if ranks == 8 and m["rank"] >= 8:
            ranks = 16
        layouts = [lo for lo in (INDEP_LAYOUTS if base["gen"] == "indep" else LAYOUTS)[ranks] if lo != base["layout"]]
        donor = draw_base(rng, base["format"], gen=base["gen"], ranks=ranks, layout=rng.choice(layouts))
    else:
        donor = draw_base(rng, base["format"], gen=base["gen"], ranks=base["ranks"], layout=base["layout"])
        donor["hosts"] = base["hosts"]
        if m["variant"] == "other_seed":
            donor["iterations"] = base["iterations"]
        else:
            counts = (6, 8, 10, 12) if base["gen"] == "indep" else (6, 8, 10, 12, 16, 20)
            donor["iterations"] = rng.choice([n for n in counts if n != base["iterations"]])
    m["donor"] = donor
    if m["variant"] == "foreign_rank":  # the donor's rank beyond this run's world claims itself
        m["donor_rank"] = rng.randrange(base["ranks"], donor["ranks"])
    else:
        m["donor_rank"] = m["rank"]
    if m["variant"] == "claim_beyond":
        m["claim"] = rng.choice([base["ranks"] + 5, 99])
    return m


def draw_empty(rng, base, second=False):
    m = {"rank": rng.randrange(base["ranks"])}
    if base["format"] == "kineto":
        m["variant"] = pick(rng, ["empty_json", "empty_gz", "gzip_of_nothing", "utf16", "braces", "gz_cut_string"])
    else:
        m["variant"] = pick(rng, ["empty_sqlite", "no_tables", "text_in_sqlite"])
    return m


DRAW = {"duplicates": draw_duplicates, "durations": draw_durations, "marker": draw_marker, "clock": draw_clock,
        "other_job": draw_other_job, "empty": draw_empty}


def draw_case(seed, index, weights, fmt_choice):
    frng = random.Random(f"semantic:{seed}:{index}:family")
    family = frng.choices(list(weights), list(weights.values()))[0]
    rng = random.Random(f"semantic:{seed}:{index}:{family}")
    fmt = rng.choice(["nsys", "kineto"])
    if fmt_choice != "both":
        fmt = fmt_choice
    base = draw_base(rng, fmt)
    mutation = DRAW[family](rng, base)
    desc = {"fuzz_seed": seed, "case": index, "family": family, "variant": mutation["variant"], "base": base,
            "mutation": mutation}
    if (rng.random() < SECOND_SHARE and family in SECOND_FAMILIES and not base["per_host_files"]
            and mutation.get("amount") != "all" and mutation["variant"] != "knob"):
        fam2 = rng.choice([f for f in SECOND_FAMILIES if f != family])
        m2 = DRAW[fam2](rng, base, second=True)
        if "rank" in m2 and m2["rank"] == mutation.get("rank"):
            m2["rank"] = (m2["rank"] + 1) % base["ranks"]
        desc["second"] = dict(m2, family=fam2)
    return desc


# ---------------------------------------------------------------------------------------------------
# Generating runs

def gen_command(sim, base, outdir, clock_ms=None):
    fault = ["--fault", base["fault"]] if base.get("fault") else []
    if base["gen"] == "sim":
        cmd = [sim, outdir, "--layout", base["layout"], "--hosts", str(base["hosts"]), "--iterations",
               str(base["iterations"]), "--layers", str(base["layers"]), "--microbatches", str(base["microbatches"]),
               "--seed", str(base["seed"])] + fault
        if base["format"] == "kineto":
            cmd += ["--format", "kineto"]
        if base.get("per_host_files"):
            cmd += ["--per-host-files"]
        if clock_ms:
            cmd += ["--clock-offset-ms", str(clock_ms)]
    else:
        cmd = [PY, INDEP, outdir, "--layout", base["layout"], "--gpus-per-host", str(base["ranks"] // base["hosts"]),
               "--iters", str(base["iterations"]), "--layers", str(base["layers"]), "--microbatches",
               str(base["microbatches"]), "--seed", str(base["seed"]), "--markers"] + fault
        if base["format"] == "kineto":
            cmd += ["--format", "kineto"]
        if clock_ms:
            cmd += ["--clock-error-ms", str(clock_ms)]
    return cmd


def generate(sim, base, outdir, truth_path, clock_ms=None):
    """Writes the run into outdir (its truth.json moved to truth_path); returns its file map."""
    shutil.rmtree(outdir, ignore_errors=True)
    cmd = gen_command(sim, base, outdir, clock_ms)
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
    if p.returncode != 0:
        raise CaseError(f"generator failed ({p.returncode}): {' '.join(map(shlex.quote, cmd))}: "
                        + p.stderr.decode("utf-8", "replace")[-400:])
    os.replace(os.path.join(outdir, "truth.json"), truth_path)
    with open(truth_path) as f:
        truth = json.load(f)
    return file_map(truth)


def file_map(truth):
    """[{"file", "host", "ranks"}] from either generator's truth.json; hosts in order."""
    files = truth["files"]
    if isinstance(files, dict):
        files = [dict(v, file=k) for k, v in files.items()]
    hosts = []
    for h in truth.get("hosts", []):
        hosts.append(h["name"] if isinstance(h, dict) else h)
    for f in files:
        if f["host"] not in hosts:
            hosts.append(f["host"])
    return {"files": files, "hosts": hosts}


def files_of_rank(fm, rank):
    return [f["file"] for f in fm["files"] if rank in f["ranks"]]


def files_of_host(fm, h):
    return [f["file"] for f in fm["files"] if f["host"] == fm["hosts"][h]]


def link_tree(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, copy_function=os.link)


def own(path):
    """Breaks the hard link to the clean copy before a file is changed in place."""
    if os.path.exists(path) and os.stat(path).st_nlink > 1:
        tmp = path + ".own"
        shutil.copyfile(path, tmp)
        os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------------
# Reading and writing the two formats

def is_gz(path):
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def load_trace(path):
    with (gzip.open(path, "rb") if is_gz(path) else open(path, "rb")) as f:
        return json.loads(f.read())


def write_bytes(path, data, gz=False):
    if os.path.lexists(path):
        os.unlink(path)
    if gz:
        data = gzip.compress(data, 6, mtime=0)
    with open(path, "wb") as f:
        f.write(data)


def save_trace(path, obj):
    gz = is_gz(path)
    write_bytes(path, json.dumps(obj, separators=(",", ":")).encode(), gz)


def sql(path, statements, params=()):
    own(path)
    con = sqlite3.connect(path)
    try:
        out = []
        for st in statements if isinstance(statements, list) else [statements]:
            out.append(con.execute(st, params).fetchall())
        con.commit()
        return out
    finally:
        con.close()


def tables(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
    finally:
        con.close()


def sample(rng, items, fraction):
    k = max(1, int(round(len(items) * fraction)))
    return sorted(rng.sample(items, min(k, len(items))))


def few_count(rng, n):
    return rng.randint(1, max(1, n * 5 // 100))


def ids_sql(ids):
    return "(" + ",".join(str(int(i)) for i in ids) + ")"


# ---------------------------------------------------------------------------------------------------
# Mutations: each applies desc["mutation"] to the run folder and returns facts for the oracle:
# {"names": [file names and ranks a message must name], ...}

def victim_file(ctx, rank):
    fs = files_of_rank(ctx["fm"], rank)
    if not fs:
        raise CaseError(f"no file holds rank {rank}")
    return fs[0]


def mutate_duplicates(ctx, m):
    run, rng = ctx["run"], random.Random(m["pick_seed"])
    if "host" in m:
        names = files_of_host(ctx["fm"], m["host"])
        ranks = [r for f in ctx["fm"]["files"] if f["file"] in names for r in f["ranks"]]
    else:
        names, ranks = [victim_file(ctx, m["rank"])], [m["rank"]]
    fname = names[0]
    path = os.path.join(run, fname)
    facts = {"files": [fname], "ranks": ranks}
    if ctx["base"]["format"] == "nsys":
        have = tables(path)
        v = m["variant"]
        todo = {"kernels_all": [KERNEL], "kernels_some": [KERNEL], "kernels_pid": [KERNEL], "runtime_all": [RUNTIME],
                "kernels_runtime": [KERNEL, RUNTIME], "nvtx_all": [NVTX], "markers": [NVTX],
                "whole": [KERNEL, RUNTIME, NVTX, "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                          "CUPTI_ACTIVITY_KIND_MEMSET"]}[v]
        stmts = []
        for t in todo:
            if t not in have:
                continue
            where = ""
            if v == "kernels_some":
                ids = [r[0] for r in sql(path, f"select rowid from {t} order by start, rowid")[0]]
                where = " where rowid in " + ids_sql(sample(rng, ids, m["fraction"]))
            elif v == "kernels_pid":
                pids = [r[0] for r in sql(path, f"select distinct globalPid from {t} order by 1")[0]]
                where = f" where globalPid = {int(rng.choice(pids))}"
            elif v == "markers":
                where = " where text like 'ProfilerStep#%'"
            stmts.append(f"insert into {t} select * from {t}{where}")
        counts = [f"select count(*) from {t}" for t in todo if t in have]
        before = sum(r[0][0] for r in sql(path, counts))
        sql(path, stmts)
        facts["rows_duplicated"] = sum(r[0][0] for r in sql(path, counts)) - before
        if not facts["rows_duplicated"]:
            raise CaseError("no row to duplicate")
        return facts
    obj = load_trace(path)
    ev = obj["traceEvents"]
    cats = {"kernels_all": {"kernel"}, "kernels_some": {"kernel"}, "runtime_all": {"cuda_runtime", "cuda_driver"},
            "kernels_runtime": {"kernel", "cuda_runtime", "cuda_driver"}, "annotations": {"user_annotation"},
            "markers": {"user_annotation"}, "whole": None}[m["variant"]]
    chosen = [i for i, e in enumerate(ev) if isinstance(e, dict) and (cats is None or e.get("cat") in cats)
              and (m["variant"] != "markers" or STEP_RE.match(str(e.get("name", ""))))]
    if m["variant"] == "kernels_some":
        chosen = sample(rng, chosen, m["fraction"])
    if not chosen:
        raise CaseError("no event to duplicate")
    if m["position"] == "append":
        ev.extend(copy.deepcopy(ev[i]) for i in chosen)
    else:
        keep = set(chosen)
        out = []
        for i, e in enumerate(ev):
            out.append(e)
            if i in keep:
                out.append(copy.deepcopy(e))
        obj["traceEvents"] = out
    save_trace(path, obj)
    facts["events_duplicated"] = len(chosen)
    return facts


def mutate_durations(ctx, m):
    rng = random.Random(m["pick_seed"])
    fname = victim_file(ctx, m["rank"])
    path = os.path.join(ctx["run"], fname)
    facts = {"files": [fname], "ranks": [m["rank"]]}
    if ctx["base"]["format"] == "nsys":
        ids = [r[0] for r in sql(path, f"select rowid from {KERNEL} order by start, rowid")[0]]
        chosen = ids if m["amount"] == "all" else sorted(rng.sample(ids, few_count(rng, len(ids))))
        if m["variant"] == "end_before_start":
            sql(path, f"update {KERNEL} set end = start - {int(m['value'])} where rowid in " + ids_sql(chosen))
        else:
            sql(path, f"update {KERNEL} set end = start + {int(m['value'])} where rowid in " + ids_sql(chosen))
        facts.update(kernels=len(ids), changed=len(chosen))
        return facts
    obj = load_trace(path)
    idx = [i for i, e in enumerate(obj["traceEvents"]) if isinstance(e, dict) and e.get("cat") == "kernel"]
    chosen = idx if m["amount"] == "all" else sorted(rng.sample(idx, few_count(rng, len(idx))))
    value = float("nan") if m["value"] == "NaN" else m["value"]
    for i in chosen:
        obj["traceEvents"][i]["dur"] = value
    save_trace(path, obj)
    facts.update(kernels=len(idx), changed=len(chosen))
    return facts


def step_choice(rng, steps, where):
    steps = sorted(steps)
    if where == "start":
        return steps[0]
    if where == "end":
        return steps[-1]
    inner = steps[1:-1] or steps
    return rng.choice(inner)


def mutate_marker(ctx, m):
    rng = random.Random(m["pick_seed"])
    fname = victim_file(ctx, m["rank"])
    path = os.path.join(ctx["run"], fname)
    facts = {"files": [fname], "ranks": [m["rank"]]}
    if ctx["base"]["format"] == "nsys":
        rows = sql(path, f"select distinct coalesce(text, (select value from StringIds where id = textId)) "
                         f"from {NVTX} where text like 'ProfilerStep#%' or textId in "
                         f"(select id from StringIds where value like 'ProfilerStep#%')")[0]
        steps = [int(STEP_RE.match(r[0]).group(1)) for r in rows if r[0] and STEP_RE.match(r[0])]
        if not steps:
            raise CaseError("no ProfilerStep markers")
        k = step_choice(rng, steps, m["where"])
        old = f"ProfilerStep#{k}"
        cond = f"(text = '{old}' or textId in (select id from StringIds where value = '{old}'))"
        if m["action"] == "remove":
            sql(path, f"delete from {NVTX} where {cond}")
        elif "\ud800" in m["text"]:  # invalid UTF-8 where the trace has a lone surrogate
            sql(path, f"update {NVTX} set textId = null, text = cast(? as text) where {cond}",
                (old.encode() + b"\xed\xa0\x80\xff",))
        else:
            sql(path, f"update {NVTX} set textId = null, text = ? where {cond}", (m["text"].replace("N", str(k)),))
        facts["step"] = k
        return facts
    obj = load_trace(path)
    ev = obj["traceEvents"]
    steps = [int(STEP_RE.match(e["name"]).group(1)) for e in ev
             if isinstance(e, dict) and isinstance(e.get("name"), str) and STEP_RE.match(e["name"])]
    if not steps:
        raise CaseError("no ProfilerStep markers")
    k = step_choice(rng, steps, m["where"])
    old = f"ProfilerStep#{k}"
    if m["action"] == "remove":
        obj["traceEvents"] = [e for e in ev if not (isinstance(e, dict) and e.get("name") == old)]
    else:
        for e in ev:
            if isinstance(e, dict) and e.get("name") == old:
                e["name"] = m["text"].replace("N", str(k))
    save_trace(path, obj)
    facts["step"] = k
    return facts


BASE_RE = re.compile(rb'("baseTimeNanoseconds"\s*:\s*)(-?\d+)')


def shift_trace(path, ns):
    """Moves a Kineto trace's wall clock by ns: its baseTimeNanoseconds (2024 traces), else every ts."""
    raw = open(path, "rb").read()
    gz = raw[:2] == b"\x1f\x8b"
    text = gzip.decompress(raw) if gz else raw
    new, n = BASE_RE.subn(lambda mm: mm.group(1) + str(int(mm.group(2)) + ns).encode(), text, count=1)
    if n:
        write_bytes(path, new, gz)
        return "baseTimeNanoseconds"
    obj = json.loads(text)
    for e in obj["traceEvents"]:
        if isinstance(e, dict) and isinstance(e.get("ts"), (int, float)):
            e["ts"] = e["ts"] + ns // 1000
    save_trace(path, obj)
    return "ts"


def mutate_clock(ctx, m):
    ns = int(m["offset_ms"]) * 1000000
    h = m["host"]
    names = files_of_host(ctx["fm"], h)
    facts = {"files": names, "ranks": [r for f in ctx["fm"]["files"] if f["file"] in names for r in f["ranks"]],
             "host": ctx["fm"]["hosts"][h]}
    if m["variant"] == "knob":
        tpath = os.path.join(ctx["casedir"], "truth-mutated.json")
        generate(ctx["sim"], ctx["base"], ctx["run"], tpath, clock_ms=m["offset_ms"])
        facts.update(files=[], ranks=[], host=None, spread_ms=clock_spread_ms(tpath))
        return facts
    for fname in names:
        path = os.path.join(ctx["run"], fname)
        if ctx["base"]["format"] == "nsys":
            sql(path, f"update TARGET_INFO_SESSION_START_TIME set utcEpochNs = utcEpochNs + {ns}")
        else:
            own(path)
            facts["moved"] = shift_trace(path, ns)
    return facts


def clock_spread_ms(truth_path):
    """How far apart the generator put the hosts' clocks (largest minus smallest host error)."""
    with open(truth_path) as f:
        t = json.load(f)
    errs = []
    for h in t.get("hosts", []):
        if isinstance(h, dict) and "clock_offset_ns" in h:
            errs.append(h["clock_offset_ns"] / 1e6)
    if isinstance(t.get("clock"), dict):
        errs += list((t["clock"].get("host_error_ms") or {}).values())
    return round(max(errs) - min(errs), 3) if errs else None


def wall_start_ns(obj):
    ts = [e["ts"] for e in obj["traceEvents"] if isinstance(e, dict) and isinstance(e.get("ts"), (int, float))]
    base = obj.get("baseTimeNanoseconds")
    first = int(round(min(ts) * 1000))
    return first + (int(base) if isinstance(base, int) else 0)


def mutate_other_job(ctx, m):
    run = ctx["run"]
    vname = victim_file(ctx, m["rank"])
    donor_dir = os.path.join(ctx["casedir"], "donor")
    dfm = generate(ctx["sim"], m["donor"], donor_dir, os.path.join(ctx["casedir"], "truth-donor.json"))
    dfiles = files_of_rank(dfm, m["donor_rank"])
    if not dfiles:
        raise CaseError(f"donor has no rank {m['donor_rank']}")
    dname = dfiles[0]
    vpath = os.path.join(run, vname)
    if ctx["base"]["format"] == "nsys":
        start = sql(vpath, "select utcEpochNs from TARGET_INFO_SESSION_START_TIME")[0][0][0]
        os.unlink(vpath)
        shutil.copyfile(os.path.join(donor_dir, dname), vpath)  # the victim's name: nsys files are named by rank
        sql(vpath, "update TARGET_INFO_SESSION_START_TIME set utcEpochNs = ?", (start,))
        newname = vname
    else:
        start = wall_start_ns(load_trace(vpath))
        os.unlink(vpath)
        newname = dname if dname not in os.listdir(run) else "other-job." + dname
        npath = os.path.join(run, newname)
        obj = load_trace(os.path.join(donor_dir, dname))
        delta = start - wall_start_ns(obj)  # captured at the same time
        if isinstance(obj.get("baseTimeNanoseconds"), int):
            obj["baseTimeNanoseconds"] += delta
        else:
            for e in obj["traceEvents"]:
                if isinstance(e, dict) and isinstance(e.get("ts"), (int, float)):
                    e["ts"] = e["ts"] + delta // 1000
        if m["variant"] == "claim_beyond":
            obj.setdefault("distributedInfo", {})["rank"] = m["claim"]
            obj["distributedInfo"]["world_size"] = ctx["base"]["ranks"]
        write_bytes(npath, json.dumps(obj, separators=(",", ":")).encode(), newname.endswith(".gz"))
    shutil.rmtree(donor_dir, ignore_errors=True)
    ranks = [m["rank"], m["donor_rank"]] + ([m["claim"]] if "claim" in m else [])
    return {"files": sorted({newname, vname}), "ranks": sorted(set(ranks)), "victim_file": vname, "donor_file": dname}


def trace_stem(name):
    for suf in (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"):
        if name.endswith(suf):
            return name[:-len(suf)]
    return name


def mutate_empty(ctx, m):
    run = ctx["run"]
    vname = victim_file(ctx, m["rank"])
    vpath = os.path.join(run, vname)
    v = m["variant"]
    if ctx["base"]["format"] == "nsys":
        own(vpath)
        if v == "empty_sqlite":
            write_bytes(vpath, b"")
        elif v == "no_tables":
            os.unlink(vpath)
            sqlite3.connect(vpath).close()
            con = sqlite3.connect(vpath)
            con.execute("create table t(x)")
            con.execute("drop table t")
            con.commit()
            con.close()
        else:
            write_bytes(vpath, b"{}\n")
        return {"files": [vname], "ranks": [m["rank"]]}
    original = load_trace(vpath)
    os.unlink(vpath)
    stem = trace_stem(vname)
    newname = stem + (".pt.trace.json.gz" if v in ("empty_gz", "gzip_of_nothing", "gz_cut_string") else ".pt.trace.json")
    npath = os.path.join(run, newname)
    if v == "empty_json":
        write_bytes(npath, b"")
    elif v == "empty_gz":
        write_bytes(npath, b"")
    elif v == "gzip_of_nothing":
        write_bytes(npath, b"", gz=True)
    elif v == "utf16":
        write_bytes(npath, json.dumps(original, ensure_ascii=False).encode("utf-16"))
    elif v == "braces":
        write_bytes(npath, b"{}")
    else:
        write_bytes(npath, b'{"x":"', gz=True)
    return {"files": [newname], "ranks": [m["rank"]]}


MUTATE = {"duplicates": mutate_duplicates, "durations": mutate_durations, "marker": mutate_marker,
          "clock": mutate_clock, "other_job": mutate_other_job, "empty": mutate_empty}


# ---------------------------------------------------------------------------------------------------
# Scanning and the verdict

def limit_memory():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))


def is_sanitized(binary):
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def scan(args, run, outdir):
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    h5, js = os.path.join(outdir, "scan.h5"), os.path.join(outdir, "summary.json")
    cmd = [args.scan, run, "-o", h5, "--summary", js]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True, preexec_fn=None if args.sanitized else limit_memory)
    hung = False
    try:
        out, err = p.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    res = {"rc": p.returncode, "hung": hung, "secs": round(time.time() - t0, 2),
           "stdout": out.decode("utf-8", "replace"), "stderr": err.decode("utf-8", "replace"),
           "cmd": " ".join(shlex.quote(c) for c in cmd), "summary": None}
    if not hung and p.returncode == 0:
        try:
            with open(js, encoding="utf-8") as f:
                res["summary"] = json.load(f)
        except (OSError, ValueError) as e:
            res["summary_error"] = f"{type(e).__name__}: {e}"
    return res


def verdict(s):
    """What is compared: stragglers (rank, cause) with their onsets, slow links by hosts, desync, healthy."""
    strag = sorted((int(x["rank"]), str(x.get("cause"))) for x in s.get("stragglers") or [])
    onset = {f"{x['rank']}:{x.get('cause')}": x.get("onset_iteration") for x in s.get("stragglers") or []}
    links = sorted({tuple(sorted(str(h) for h in (x.get("hosts") or []))) for x in s.get("slow_links") or []})
    desync = bool(s.get("desync"))
    clock = s.get("clock") if isinstance(s.get("clock"), dict) else {}
    return {"stragglers": [list(x) for x in strag], "onsets": onset, "slow_links": [list(x) for x in links],
            "desync": desync, "healthy": not strag and not links and not desync, "unaligned": clock.get("unaligned_ranks"),
            "ranks": s.get("ranks"), "ranks_failed": [{"rank": f.get("rank"), "file": os.path.basename(str(f.get("file", ""))),
                                                       "error": str(f.get("error", ""))[:160]}
                                                      for f in s.get("ranks_failed") or []]}


def core(v):
    return {k: v[k] for k in ("stragglers", "slow_links", "desync", "healthy")}


def show(v):
    s = ", ".join(f"rank {r} {c} (onset {v['onsets'].get(f'{r}:{c}')})" for r, c in v["stragglers"]) or "no straggler"
    s += "; slow links " + (", ".join("-".join(h) or "(hosts unknown)" for h in v["slow_links"]) or "none")
    s += "; desync " + ("yes" if v["desync"] else "no") + ("; healthy" if v["healthy"] else "")
    if v["ranks_failed"]:
        s += "; failed " + ", ".join(f"{f['file']} (rank {f['rank']})" for f in v["ranks_failed"])
    return s


NUM_RE = re.compile(r"\d+(?:\.\d+)?")


def norm(line):
    return NUM_RE.sub("N", line.strip())


def new_lines(clean, mutated):
    """Lines of the mutated run's output (stdout and stderr) whose text, numbers elided, the clean run
    did not print: a message that was there before says nothing about the mutation."""
    seen = {norm(l) for l in (clean["stdout"] + "\n" + clean["stderr"]).splitlines()}
    return [l for l in (mutated["stdout"] + "\n" + mutated["stderr"]).splitlines() if l.strip() and norm(l) not in seen]


def names_re(files, ranks):
    parts = [re.escape(f) for f in files if f]
    parts += [rf"\brank[\s_#:=-]*{int(r)}\b" for r in ranks]
    return re.compile("|".join(parts), re.I) if parts else None


def find_line(lines, keywords, files=(), ranks=(), need_name=True, ignore=()):
    """The first line with one of the keywords (and a name of the file or rank where need_name), among
    those that hold none of the `ignore` words (report lines that carry a keyword for another reason)."""
    names = names_re(files, ranks)
    for l in lines:
        low = l.lower()
        if any(w in low for w in ignore):
            continue
        if any(k in low for k in keywords) and (not need_name or (names and names.search(l))):
            return l
    return None


def failed_has(v, files, ranks):
    return any(f["file"] in files or (f["rank"] is not None and f["rank"] in ranks) for f in v["ranks_failed"])


# ---------------------------------------------------------------------------------------------------
# The oracle

def check_run(res, what):
    """Promises of every scan: exit 0, no signal, hang, sanitizer report, internal error or traceback."""
    probs = []
    text = res["stdout"] + "\n" + res["stderr"]
    if res["hung"]:
        return [("hang", f"{what}: no exit within the timeout")]
    san = [l for l in res["stderr"].splitlines() if any(mk in l for mk in SAN_MARKERS)]
    if san:
        probs.append(("sanitizer", f"{what}: {san[0].strip()[:160]}"))
    if res["rc"] < 0 or res["rc"] > 128:
        probs.append(("signal", f"{what}: killed by signal {-res['rc'] if res['rc'] < 0 else res['rc'] - 128}"))
    elif res["rc"] == 2:
        err = [l for l in res["stderr"].splitlines() if l.strip()]
        probs.append(("exit 2", f"{what}: exit 2 although the other ranks are usable ({len(err)} stderr lines): "
                      + (err[-1][:200] if err else "(no message)")))
    elif res["rc"] != 0:
        probs.append((f"exit {res['rc']}", f"{what}: exit {res['rc']}: "
                      + ((res["stderr"].strip().splitlines() or ["(no message)"])[-1][:200])))
    for mk in ("internal error", "Traceback (most recent call last)", "std::bad_alloc", "terminate called"):
        if mk.lower() in text.lower():
            probs.append(("internal error", f"{what}: says '{mk}'"))
            break
    if res["rc"] == 0 and res["summary"] is None:
        probs.append(("summary", f"{what}: exit 0 without a readable summary ({res.get('summary_error', '')})"))
    return probs


def names_note(facts):
    return " or ".join([f for f in facts.get("files", [])] + [f"rank {r}" for r in facts.get("ranks", [])])


def mutations(desc):
    """(family, mutation) of a case: its one mutation, and the second where it has one."""
    out = [(desc["family"], desc["mutation"])]
    if desc.get("second"):
        out.append((desc["second"]["family"], desc["second"]))
    return out


def judge(desc, facts_list, clean, mutated, notes, without=None):
    """Problems as (code, text); the code names the finding's signature. Observations that break no rule
    of the oracle go to notes."""
    probs = check_run(clean, "clean run")
    if probs:
        return [("clean run failed: " + c, t) for c, t in probs]
    probs = check_run(mutated, "mutated run")
    if mutated["hung"] or mutated["summary"] is None:
        return probs
    cv, mv = verdict(clean["summary"]), verdict(mutated["summary"])
    lines = new_lines(clean, mutated)
    wv = verdict(without["summary"]) if without and not check_run(without, "run without the victim") else None
    for (fam, m), facts in zip(mutations(desc), facts_list):
        family_checks(fam, m, facts, wv if fam == "other_job" and wv else cv, mv, lines, probs, notes)
    out = []
    for p in probs:
        if p not in out:
            out.append(p)
    return out


def family_checks(fam, m, facts, cv, mv, lines, probs, notes):
    files, ranks = facts.get("files", []), facts.get("ranks", [])
    changed = f"clean [{show(cv)}] -> mutated [{show(mv)}]"

    def need_line(keywords, what, need_name=True, ignore=()):
        if not find_line(lines, keywords, files, ranks, need_name, ignore):
            named = f" naming {names_note(facts)}" if need_name else ""
            probs.append((f"no '{what}' line", f"{fam}: no new line saying {' / '.join(repr(k) for k in keywords)}{named}"))

    def need_same():
        if core(cv) != core(mv):
            probs.append(("verdict changed", f"verdict changed: {changed}"))

    if fam == "duplicates":
        need_line(["duplicate"], "duplicate")
        need_same()
    elif fam == "durations":
        if not (m["variant"] == "dur_0" and m["amount"] == "few"):  # dur 0 of a sub-microsecond kernel is real (2023 traces)
            # not the clock line "collectives ending before their last member arrived (impossible on one clock)"
            need_line(["duration", "end before", "impossible"], "duration", ignore=["clock"])
        if m["amount"] == "few":
            need_same()
        elif not failed_has(mv, files, ranks):
            clean_causes = {c for r, c in cv["stragglers"] if r == m["rank"]}
            wrong = [c for r, c in mv["stragglers"] if r == m["rank"] and c not in clean_causes]
            if wrong:
                probs.append(("wrong cause", f"rank {m['rank']} (every kernel's duration bad, not refused) named "
                              f"{', '.join(wrong)}; {changed}"))
    elif fam == "marker":
        # not the straggler's own lines ("since: iteration 3", "post-mortem (iterations 1-5): rank 3 ...")
        need_line(["marker", "iteration"], "marker", ignore=["post-mortem", "since:", "costs the job"])
        need_same()  # onsets are not in core(): compared below, one iteration of slack
        if core(cv) == core(mv):
            for key, on in cv["onsets"].items():
                mo = mv["onsets"].get(key)
                if isinstance(on, int) and isinstance(mo, int) and abs(on - mo) > 1:
                    probs.append(("onset moved", f"onset of {key} moved by more than one iteration: {on} -> {mo}"))
    elif fam == "clock":
        if (facts.get("spread_ms") or 1e9) >= 30:  # the knob may draw errors within the 20 ms NTP bound
            need_line(["clock"], "clock", need_name=False)
        bad = [l for l in lines if any(k in l.lower() for k in ("not one job", "slow link", "not one run", "different times"))]
        if bad:
            probs.append(("false slow link / not one job", f"new line the clean run did not print: {bad[0].strip()[:220]}"))
        need_same()
        cu, mu = (v.get("unaligned") or 0 for v in (cv, mv))
        if mu > cu and core(cv) == core(mv):
            notes.append(f"clock: {mu} ranks left unaligned (clean run: {cu}), verdict kept")
    elif fam == "other_job":
        kw = ["another job", "other job", "does not belong", "not belong"]
        if m["variant"] in ("foreign_rank", "claim_beyond"):
            kw += ["world"]
        need_line(kw, "another job")
        lost = [x for x in cv["stragglers"] if x not in mv["stragglers"]]
        if lost:
            probs.append(("straggler lost", "clean straggler(s) " + ", ".join(f"rank {r} {c}" for r, c in lost)
                          + f" not found; {changed}"))
        extra = [x for x in mv["stragglers"] if x not in cv["stragglers"]]
        extra_links = [x for x in mv["slow_links"] if x not in cv["slow_links"]]
        new_desync = mv["desync"] and not cv["desync"]
        if extra or extra_links or new_desync:
            probs.append(("new verdict", "new verdict: " + "; ".join(
                [f"rank {r} {c}" for r, c in extra] + ["slow link " + ("-".join(x) or "(hosts unknown)") for x in extra_links]
                + (["desync"] if new_desync else [])) + f"; {changed}"))
    elif fam == "empty":
        names = names_re(files, [])
        if not any(names.search(l) for l in lines):
            probs.append(("file not named", f"no new line names {', '.join(files)}"))


def label(desc):
    fams = "+".join(f for f, _ in mutations(desc))
    variants = "+".join(m["variant"] for _, m in mutations(desc))
    return f"{fams}:{desc['base']['format']}:{variants}"


def signature(desc, probs):
    return f"[semantic:{label(desc)}] {probs[0][0]}"


def slug(sig):
    s = "".join(c if c.isalnum() or c in "-_." else "_" for c in sig)
    return re.sub(r"_+", "_", s)[:90].strip("_")


# ---------------------------------------------------------------------------------------------------
# Running cases

def rerun_command(args, desc):
    parts = [PY, os.path.abspath(__file__), "--scan", args.scan, "--sim", args.sim, "--workdir", args.workdir,
             "--seed", str(desc["fuzz_seed"]), "--case", str(desc["case"])]
    if args.format != "both":
        parts += ["--format", args.format]
    if args.families:
        parts += ["--families", args.families]
    return " ".join(shlex.quote(p) for p in parts)


def run_one(args, desc):
    casedir = os.path.join(args.workdir, f"case-{desc['case']}" if args.keep else "case")
    shutil.rmtree(casedir, ignore_errors=True)
    os.makedirs(casedir)
    run, clean_dir, outdir = (os.path.join(casedir, n) for n in ("run", "clean", "out"))
    base = desc["base"]
    t0 = time.time()
    fm = generate(args.sim, base, run, os.path.join(casedir, "truth.json"))
    clean = scan(args, run, outdir)
    os.rename(run, clean_dir)
    link_tree(clean_dir, run)
    ctx = {"run": run, "casedir": casedir, "fm": fm, "base": base, "sim": args.sim}
    facts = [] if args.null else [MUTATE[fam](ctx, m) for fam, m in mutations(desc)]
    mutated = scan(args, run, outdir)
    # Another job's profile is no rank of this job: the truth for its verdict is this run without
    # the victim's file (the counterfactual), not the clean run with it.
    without = None
    victims = [f.get("victim_file") for (fam, _), f in zip(mutations(desc), facts) if fam == "other_job" and f.get("victim_file")]
    if victims:
        wdir = os.path.join(casedir, "without")
        link_tree(clean_dir, wdir)
        for v in victims:
            if os.path.exists(os.path.join(wdir, v)):
                os.unlink(os.path.join(wdir, v))
        without = scan(args, wdir, os.path.join(casedir, "out-without"))
    notes = []
    if args.null:  # the harness itself: an unchanged copy must give the same verdict and no new line
        probs = check_run(clean, "clean run") + check_run(mutated, "second run")
        if not probs and core(verdict(clean["summary"])) != core(verdict(mutated["summary"])):
            probs.append(("verdict changed", f"unchanged copy: [{show(verdict(clean['summary']))}] -> "
                          f"[{show(verdict(mutated['summary']))}]"))
        if not probs and new_lines(clean, mutated):
            probs.append(("new lines", "unchanged copy printed: " + new_lines(clean, mutated)[0][:200]))
    else:
        probs = judge(desc, facts, clean, mutated, notes, without)
    res = {"ok": not probs, "problems": [t for _, t in probs], "notes": notes, "facts": facts, "secs": round(time.time() - t0, 2),
           "clean": {k: clean[k] for k in ("rc", "secs", "cmd")}, "mutated": {k: mutated[k] for k in ("rc", "secs", "cmd")}}
    for name, r in (("clean", clean), ("mutated", mutated)):
        if r["summary"] is not None:
            res[name]["verdict"] = show(verdict(r["summary"]))
    res["new_lines"] = new_lines(clean, mutated)[:40] if not clean["hung"] and not mutated["hung"] else []
    res["stderr"] = mutated["stderr"][-4000:]
    res["signature"] = signature(desc, probs) if probs else ""
    res["rerun"] = rerun_command(args, desc)
    if not args.keep and args.case is None:
        shutil.rmtree(casedir, ignore_errors=True)
    return res


def save_finding(args, desc, res):
    dest = os.path.join(args.workdir, "findings", slug(res["signature"]))
    os.makedirs(dest, exist_ok=True)
    rec = dict(desc, signature=res["signature"], problems=res["problems"], facts=res["facts"],
               clean=res["clean"], mutated=res["mutated"], new_lines=res["new_lines"], stderr=res["stderr"],
               rerun=res["rerun"], generate=" ".join(shlex.quote(c) for c in gen_command(args.sim, desc["base"], "RUN")),
               status="open")
    if desc["family"] == "other_job":
        rec["generate_donor"] = " ".join(shlex.quote(c) for c in gen_command(args.sim, desc["mutation"]["donor"], "DONOR"))
    with open(os.path.join(dest, "case.json"), "w") as f:
        json.dump(rec, f, indent=1)
    return dest


def parse_families(spec):
    if not spec:
        return dict(FAMILIES)
    out = {}
    for name in spec.split(","):
        name = name.strip()
        if name not in FAMILIES:
            print(f"--families: unknown family {name} (known: {', '.join(FAMILIES)})", file=sys.stderr)
            sys.exit(2)
        out[name] = FAMILIES[name]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scan", required=True, help="straggler-scan binary")
    ap.add_argument("--sim", required=True, help="straggler-sim binary")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int)
    ap.add_argument("--minutes", type=float)
    ap.add_argument("--quick", action="store_true", help="the ctest mode: 40 cases (unless --cases says otherwise)")
    ap.add_argument("--first", type=int, default=0, help="index of the first case")
    ap.add_argument("--case", type=int, help="run only case I (its folder kept: WORKDIR/case) and print it")
    ap.add_argument("--replay", help="rerun the recipe of a saved case.json")
    ap.add_argument("--families", help=f"comma list (default all: {', '.join(f'{k} {v}' for k, v in FAMILIES.items())})")
    ap.add_argument("--format", choices=["nsys", "kineto", "both"], default="both")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--null", action="store_true", help="self-check of the harness: no mutation; the second scan "
                    "(of the hard-linked copy) must give the clean verdict and no new line")
    ap.add_argument("--keep", action="store_true", help="keep every case folder (WORKDIR/case-I: clean/, run/, out/)")
    ap.add_argument("--results", help="write one JSON line per case here (default WORKDIR/results.jsonl)")
    args = ap.parse_args()
    args.workdir = os.path.abspath(args.workdir)
    args.scan, args.sim = os.path.abspath(args.scan), os.path.abspath(args.sim)
    for b in (args.scan, args.sim):
        if not os.access(b, os.X_OK):
            ap.error(f"not an executable: {b}")
    args.sanitized = is_sanitized(args.scan)
    weights = parse_families(args.families)
    if args.cases is None and args.minutes is None:
        args.cases = 40 if args.quick else 60
    os.makedirs(args.workdir, exist_ok=True)
    results = open(args.results or os.path.join(args.workdir, "results.jsonl"), "w")
    t0 = time.time()
    if args.replay:
        with open(args.replay) as f:
            rec = json.load(f)
        descs = [{k: rec[k] for k in ("fuzz_seed", "case", "family", "variant", "base", "mutation", "second") if k in rec}]
        args.case = rec["case"]
    elif args.case is not None:
        descs = [draw_case(args.seed, args.case, weights, args.format)]
    else:
        descs = None
    by_family = collections.defaultdict(collections.Counter)
    seen, hits, errors, n = {}, collections.Counter(), 0, 0
    i = args.first
    while True:
        if descs is not None:
            if n >= len(descs):
                break
            desc = descs[n]
        else:
            if args.minutes is not None and time.time() - t0 >= args.minutes * 60:
                break
            if args.minutes is None and i >= args.first + args.cases:
                break
            desc = draw_case(args.seed, i, weights, args.format)
            i += 1
        n += 1
        key = f"{desc['family']}"
        try:
            res = run_one(args, desc)
        except (CaseError, subprocess.TimeoutExpired, sqlite3.Error, OSError, ValueError, KeyError) as e:
            errors += 1
            by_family[key]["not built"] += 1
            print(f"case {desc['case']} ({label(desc)}): not built: {type(e).__name__}: {e}",
                  flush=True)
            results.write(json.dumps({"case": desc["case"], "family": desc["family"], "variant": desc["variant"],
                                      "error": str(e)[:300]}) + "\n")
            continue
        results.write(json.dumps({"case": desc["case"], "family": desc["family"], "variant": desc["variant"],
                                  "label": label(desc), "format": desc["base"]["format"], "gen": desc["base"]["gen"], "ok": res["ok"],
                                  "signature": res["signature"], "problems": res["problems"], "notes": res["notes"],
                                  "secs": res["secs"],
                                  "clean": res["clean"].get("verdict"), "mutated": res["mutated"].get("verdict")}) + "\n")
        results.flush()
        fmt = desc["base"]["format"]
        if res["ok"]:
            by_family[key]["pass, with a note" if res["notes"] else "pass"] += 1
            for note in res["notes"]:
                print(f"case {desc['case']} ({label(desc)}): note: {note}", flush=True)
        else:
            by_family[key]["FAIL"] += 1
            sig = res["signature"]
            hits[sig] += 1
            if sig not in seen:
                seen[sig] = desc["case"]
                dest = save_finding(args, desc, res)
                print(f"case {desc['case']} ({fmt}, {desc['base']['gen']}): NEW {sig}\n  "
                      + "\n  ".join(res["problems"][:4]) + f"\n  saved in {dest}", flush=True)
        if args.case is not None:
            print(json.dumps({"desc": desc, "result": res}, indent=1)[:30000])
        elif n % 20 == 0:
            print(f"{n} cases, {sum(hits.values())} failing, {len(seen)} signatures, {time.time() - t0:.0f} s", flush=True)
    results.close()
    print(f"\n{n} cases in {time.time() - t0:.0f} s (seed {args.seed}); {errors} not built")
    for fam in sorted(by_family):
        c = by_family[fam]
        print(f"  {fam}: " + ", ".join(f"{k} {v}" for k, v in c.most_common()))
    print(f"findings: {len(seen)} signatures" + "".join(f"\n  case {c}: {s} (x{hits[s]})" for s, c in seen.items()))
    return 1 if seen else 0


if __name__ == "__main__":
    sys.exit(main())
