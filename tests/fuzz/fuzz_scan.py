#!/usr/bin/python3
"""Fuzzer of the scan-file readers: `straggler-scan report / compare / scaling` and the Python
scripts (report_html.py, plot_*.py) on hostile HDF5 scans (SCAN_FUZZ.md).

A scan file is untrusted input (docs/hdf5-layout.md, "Reading a scan someone sent you: what is
refused"). Each case is a copy of a seed scan (made at start-up with the given binaries) changed by
one family (scan_mutate.py: structure, sizes, storage kinds, strings, types, values, attributes, raw
bytes, the path itself, and legitimate rewrites that must still read), and one command run on it,
drawn per case. The oracle (`judge`): exit 0, or exit 2 with exactly one stderr line naming the
file; never a signal, a hang, a sanitizer report, a traceback, "internal error", exit 1 (but "cannot
write"), peak RSS over a bound; no canary (a marker file reached through external storage, links or
virtual datasets, /etc/passwd, the environment) in any output; no raw control bytes on stdout or
stderr; no output and no temporary left on failure; the inputs unchanged; files the contract refuses
refused, legitimate rewrites read as the unmutated seed reads.

Case i of --seed S is always the same bytes (HDF5 object-header times are fixed). Failures are saved
once per signature under WORKDIR/findings/<signature>/ (case.json: the recipe, which rebuilds the
case from the seeds, and the result; case.h5.gz). A corpus of recipes is replayed first.

  fuzz_scan.py --scan BIN --sim BIN [--scripts DIR] [--workdir DIR] [--seed S] [--cases N | --minutes M]
               [--corpus DIR] [--replay-only] [--case I] [--families F,F] [--commands C,C] [--sanitized]
Exit status: 0 when no new finding and no corpus case marked fixed fails.
"""
import argparse
import collections
import gzip
import hashlib
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import h5py  # noqa: E402
import numpy as np  # noqa: E402

import oracle  # noqa: E402
import scan_h5  # noqa: E402
import scan_mutate as M  # noqa: E402

ROOT = oracle.ROOT
PYTHON = "/usr/bin/python3"
SEEDS = {  # name -> (kind, weight): which file a case mutates
    "scan8": ("scan", 40), "kineto8": ("scan", 12), "scan16": ("scan", 8), "scan128": ("scan", 8),
    "compare": ("compare", 12), "scaling": ("scaling", 8)}
COMMANDS = {  # seed kind -> command -> weight (the Python scripts take 0.5-2.5 s a run, the binary 0.1 s)
    "scan": {"report": 26, "report_summary": 13, "compare": 10, "compare_rev": 7, "scaling": 6, "scaling_rev": 3,
             "report_html": 12, "plot_stragglers": 3, "plot_waterfall": 1, "plot_findings": 1, "plot_pipeline": 1,
             "plot_scaling": 1},
    "compare": {"report": 34, "compare": 24, "report_html": 18, "plot_compare": 12},
    "scaling": {"report": 30, "scaling": 30, "scaling_rev": 12, "report_html": 15, "plot_scaling": 12},
}
ALL_COMMANDS = sorted({c for cs in COMMANDS.values() for c in cs})
OUTPUTS = {"report_summary": "summary.json", "compare": "compare.h5", "compare_rev": "compare.h5",
           "scaling": "scaling.h5", "scaling_rev": "scaling.h5", "report_html": "page.html"}
TMP_RE = re.compile(r"(^\..*\.tmp-|\.tmp(\.h5)?$|\.tmp\.|^tmp[a-z0-9_]{6,}$)")
CASE = "case.h5"


def cmd_group(c):
    return {"report_summary": "report", "compare_rev": "compare", "scaling_rev": "scaling"}.get(c, c)


# ---------------------------------------------------------------- seeds


def file_hash(paths):
    h = hashlib.sha1()
    for p in paths:
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:12]


def run_quiet(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
    if r.returncode:
        sys.exit(f"seed command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr.decode(errors='replace')[-2000:]}")


def make_seeds(args):
    """The seed scans (made with relative paths in WORKDIR/seeds-HASH, so that their command_line and
    /inputs are the same whatever the work folder), their structure, the canaries."""
    d = os.path.join(args.workdir, "seeds-" + file_hash([args.scan, args.sim]))
    done = os.path.join(d, "seeds.json")
    tables = os.path.join(args.scripts, "scan_tables.json")
    if os.path.isfile(done):
        with open(done) as f:
            seeds = json.load(f)
        if seeds.get("_tables") == (file_hash([tables]) if os.path.isfile(tables) else ""):
            return seeds
    os.makedirs(d, exist_ok=True)
    S, sim = args.scan, args.sim
    fault = ["--fault", "slow_gpu:3:2:1.4"]
    small = ["--layout", "2x2x2", "--hosts", "2", "--iterations", "6"]
    steps = [
        ([sim, "run8"] + small + fault, [S, "run8", "-o", "scan8.h5", "--summary", "scan8.json", "-q"]),
        ([sim, "runk"] + small + ["--format", "kineto"], [S, "runk", "-o", "kineto8.h5", "-q"]),
        ([sim, "run16", "--layout", "2x2x4", "--hosts", "4", "--iterations", "6"], [S, "run16", "-o", "scan16.h5", "-q"]),
        ([sim, "run128", "--layout", "2x4x16", "--hosts", "16", "--iterations", "10"], [S, "run128", "-o", "scan128.h5", "-q"]),
        (None, [S, "compare", "kineto8.h5", "scan8.h5", "-o", "compare.h5", "-q"]),
        (None, [S, "scaling", "scan8.h5", "scan16.h5", "-o", "scaling.h5", "-q"]),
    ]
    for gen, scan in steps:
        if gen:
            shutil.rmtree(os.path.join(d, gen[1]), ignore_errors=True)
            run_quiet(gen, d)
        run_quiet(scan, d)
        if gen:
            shutil.rmtree(os.path.join(d, gen[1]), ignore_errors=True)
    seeds = {"_dir": d, "_tables": file_hash([tables]) if os.path.isfile(tables) else ""}
    for name in SEEDS:
        p = os.path.join(d, name + ".h5")
        scan_h5.normalize_times(p)
        info = scan_h5.describe(p, tables)
        with open(p, "rb") as f:
            buf = f.read()
        info["size"] = len(buf)
        offs = []
        for sig in M.SIGNATURES:
            i = buf.find(sig)
            while i >= 0 and len(offs) < 4000:
                offs.append(i)
                i = buf.find(sig, i + 1)
        info["meta_offsets"] = sorted(offs)
        seeds[name] = {"path": p, "kind": SEEDS[name][0], "info": info}
    make_canaries(d, seeds["scan8"]["path"])
    with open(done, "w") as f:
        json.dump(seeds, f)
    return seeds


def make_canaries(d, scan8):
    """canary.txt: the marker, over and over (external storage reads it); canary.h5: scan8 with every
    string replaced by the marker, plus /s64, /f8, /i8 of 4096 rows (external links and virtual
    datasets point there)."""
    with open(os.path.join(d, "canary.txt"), "wb") as f:
        f.write((M.MARKER + b"\n") * 8192)
    p = os.path.join(d, "canary.h5")
    shutil.copyfile(scan8, p)
    with scan_h5.open_rw(p) as f:
        strings = []
        f.visititems(lambda n, o: strings.append("/" + n) if isinstance(o, h5py.Dataset) and o.dtype.kind == "S" else None)
        for s in strings:
            n = f[s].shape
            del f[s]
            f.create_dataset(s, data=np.full(n, M.MARKER, dtype="S64"))
        f.create_dataset("/s64", data=np.full(4096, M.MARKER, dtype="S64"))
        f.create_dataset("/f8", data=np.full(4096, 1.5))
        f.create_dataset("/i8", data=np.full(4096, 3, dtype="<i8"))
        f.attrs["hosts"] = np.array([M.MARKER] * 2)
        f.attrs["command_line"] = M.MARKER


# ---------------------------------------------------------------- building a case


class Ctx:
    def __init__(self, path, casedir, seed_path):
        self.path, self.casedir, self.seed_path, self.f = path, casedir, seed_path, None


def partner(command, seed):
    if command.startswith("compare"):
        return "scan8"
    if command.startswith("scaling"):
        return "scan8" if seed == "scan16" else "scan16"
    return None


def weighted(rng, weights):
    items = sorted(weights.items())
    return rng.choices([k for k, _ in items], [w for _, w in items])[0]


def draw_case(args, seeds, index):
    """The recipe of case `index`: its family from a stream of its own, the command from another, the
    seed and the mutation from SEED:INDEX (so a case's bytes do not depend on --families or --commands
    beyond which seeds these allow)."""
    family = weighted(random.Random(f"{args.seed}:{index}:family"), args.family_weights)
    rng = random.Random(f"{args.seed}:{index}")
    usable = {s: w for s, (k, w) in SEEDS.items() if any(c in args.commands for c in COMMANDS[k])}
    seed = weighted(rng, usable)
    r = M.draw(rng, family, seeds[seed]["info"])
    r.update(seed=seed, fuzz_seed=args.seed, case=index)
    cmds = {c: w for c, w in COMMANDS[SEEDS[seed][0]].items() if c in args.commands}
    if seed == "scan128" and "plot_stragglers" in cmds:
        cmds["plot_stragglers"] *= 1.5  # the by-host mode
    r["command"] = weighted(random.Random(f"{args.seed}:{index}:command"), cmds)
    return r


def materialize(seeds, r, casedir, command=None):
    """Writes the case of recipe r into casedir (case.h5, good.h5 for compare/scaling, the canaries)."""
    shutil.rmtree(casedir, ignore_errors=True)
    os.makedirs(casedir)
    d = seeds["_dir"]
    seed_path = seeds[r["seed"]]["path"]
    for c in ("canary.txt", "canary.h5"):
        shutil.copyfile(os.path.join(d, c), os.path.join(casedir, c))
    other = partner(command or r["command"], r["seed"])
    if other:
        shutil.copyfile(seeds[other]["path"], os.path.join(casedir, "good.h5"))
    path = os.path.join(casedir, CASE)
    shutil.copyfile(seed_path, path)
    M.apply(r, Ctx(path, casedir, seed_path))
    if os.path.isfile(path) and not os.path.islink(path):
        with open(path, "rb") as f:
            buf = f.read()
        for m in (M.MARKER, M.PASSWD, M.ENV_MARKER.encode()):
            if m in buf:
                raise RuntimeError(f"fuzzer bug: the case file itself holds the canary {m!r}")


# ---------------------------------------------------------------- running a command


def command_line(args, command, outdir):
    S = args.scan
    out = lambda name: os.path.join(outdir, name)  # noqa: E731
    return {
        "report": [S, "report", CASE],
        "report_summary": [S, "report", CASE, "--summary", out("summary.json")],
        "compare": [S, "compare", CASE, "good.h5", "-o", out("compare.h5")],
        "compare_rev": [S, "compare", "good.h5", CASE, "-o", out("compare.h5")],
        "scaling": [S, "scaling", CASE, "good.h5", "-o", out("scaling.h5")],
        "scaling_rev": [S, "scaling", "good.h5", CASE, "-o", out("scaling.h5")],
        "report_html": [args.python, os.path.join(args.scripts, "report_html.py"), CASE, out("page.html"), "--scan", S],
    }.get(command) or [args.python, os.path.join(args.scripts, command + ".py"), CASE, out("plots")]


def child_env(args):
    env = {"SCANFUZZ_CANARY": M.ENV_MARKER}  # first, so /proc/self/environ starts with it
    env.update(oracle.child_env(args.scan))
    env.update(MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", LC_ALL="C.UTF-8")
    for k in ("HDF5_PLUGIN_PATH", "HDF5_EXTFILE_PREFIX", "HDF5_VDS_PREFIX", "STRAGGLER_SCAN"):
        env.pop(k, None)
    return env


CAP = 32 << 20


def run_child(cmd, cwd, env, timeout, mem_limit):
    """Runs cmd in its own session; returns rc (negative: signal), stdout, stderr, seconds, peak RSS
    in KiB of the child and what it waited for (wait4), and whether it was killed for the timeout."""
    def pre():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if mem_limit:
            resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))
    t0 = time.time()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True, preexec_fn=pre)
    bufs = {"out": bytearray(), "err": bytearray()}

    def reader(stream, key):
        while True:
            chunk = stream.read(65536)
            if not chunk:
                break
            if len(bufs[key]) < CAP:
                bufs[key] += chunk[:CAP - len(bufs[key])]
    threads = [threading.Thread(target=reader, args=(p.stdout, "out"), daemon=True),
               threading.Thread(target=reader, args=(p.stderr, "err"), daemon=True)]
    for t in threads:
        t.start()
    hung, delay = False, 0.002
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.time() - t0 > timeout:
            hung = True
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(delay)
        delay = min(0.02, delay * 1.5)
    secs = time.time() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    try:  # what it left behind (report_html's straggler-scan)
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for t in threads:
        t.join(5)
    p.stdout.close()
    p.stderr.close()
    return {"rc": p.returncode, "out": bytes(bufs["out"]), "err": bytes(bufs["err"]), "secs": secs,
            "rss_kb": ru.ru_maxrss, "hung": hung}


def run_command(args, r, casedir, outdir, command=None):
    command = command or r["command"]
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    cmd = command_line(args, command, outdir)
    before = oracle.tree_state(casedir)
    res = run_child(cmd, casedir, args.env, args.timeout, None if args.sanitized else oracle.MEM_LIMIT)
    res["before"], res["after"] = before, oracle.tree_state(casedir)
    res["outputs"] = output_files(outdir)
    res["cmd"] = f"cd {shlex.quote(casedir)} && " + " ".join(shlex.quote(c) for c in cmd)
    res["command"] = command
    return res


def output_files(outdir):
    """Relative path -> bytes of every plain file under outdir (links and others by type)."""
    out = {}
    for root, dirs, files in os.walk(outdir):
        for name in files:
            p = os.path.join(root, name)
            rel = os.path.relpath(p, outdir)
            if os.path.islink(p) or not os.path.isfile(p):
                out[rel] = b"(not a plain file)"
                continue
            with open(p, "rb") as f:
                out[rel] = f.read(64 << 20)
    return out


# ---------------------------------------------------------------- the oracle

CONTROL = [(re.compile(rb"\x1b"), "ESC"), (re.compile(rb"\x07"), "BEL"), (re.compile(rb"\r"), "CR"), (re.compile(rb"\x00"), "NUL"),
           (re.compile(rb"[\x01-\x06\x08\x0b\x0c\x0e-\x1a\x1c-\x1f]"), "C0"), (re.compile(rb"\x7f"), "DEL")]


def control_bytes(data):
    """Names of the raw control bytes in data: C0 but \\n and \\t, DEL, C1 (as UTF-8 or raw), bytes
    that are not UTF-8."""
    found = [name for rx, name in CONTROL if rx.search(data)]
    text = data.decode("utf-8", "surrogateescape")
    if re.search("[\u0080-\u009f]", text):
        found.append("C1")
    raw = re.findall("[\udc80-\udcff]", text)
    if any(0xDC80 <= ord(c) <= 0xDC9F for c in raw):
        found.append("C1 raw")
    if any(ord(c) > 0xDC9F for c in raw):
        found.append("not UTF-8")
    return found


def traceback_sig(err):
    lines = err.splitlines()
    exc = ""
    for line in reversed(lines):
        m = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Interrupt|Exit)|[A-Z]\w+Error)\b", line)
        if m:
            exc = m.group(1).split(".")[-1]
            break
    frame = ""
    for m in re.finditer(r'File "([^"]+)", line \d+, in (\S+)', err):
        if "/scripts/" in m.group(1) or m.group(1).endswith("fuzz_scan.py"):
            frame = f"{os.path.basename(m.group(1))}:{m.group(2)}"
    return f"traceback {exc or '?'} @ {frame or '?'}"


def judge(args, r, res, base):
    """Problems of one run, most serious first, as (kind, message)."""
    P = []
    rc, err_b, out_b = res["rc"], res["err"], res["out"]
    err = err_b.decode("utf-8", "replace")
    lines = [l for l in err.splitlines() if l.strip()]
    san = [l for l in lines if any(m in l for m in oracle.SAN_MARKERS)]
    expect = r.get("expect", "any")
    if san:
        P.append(("sanitizer", "sanitizer: " + san[0].strip()))
    if rc < 0 and not res["hung"]:
        P.append(("signal", f"killed by signal {-rc}"))
    bound = args.rss_mb
    if bound and not args.sanitized and res["rss_kb"] > bound * 1024:
        P.append(("memory", f"peak RSS {res['rss_kb'] >> 10} MiB over the bound of {bound} MiB"))
    if res["hung"]:
        P.append(("hang", f"hang: no exit within {args.timeout:.0f} s"))
    if "Traceback (most recent call last)" in err:
        P.append(("traceback", traceback_sig(err)))
    leaks = []
    for name, marker in (("canary", M.MARKER), ("environment canary", M.ENV_MARKER.encode()), ("passwd", M.PASSWD)):
        where = [w for w, data in [("stdout", out_b), ("stderr", err_b)] + sorted(res["outputs"].items()) if marker in data]
        if where:
            leaks.append(f"{name} in {', '.join(where)}")
    if leaks:
        P.append(("leak", "leak: " + "; ".join(leaks)))
    if not res["hung"] and rc >= 0 and rc not in (0, 2) and not (rc == 1 and "cannot write" in err):
        P.append(("exit", f"exit {rc}: " + (lines[-1][:160] if lines else "(no message)")))
    if "internal error" in err:
        P.append(("internal", "internal error: " + [l for l in lines if "internal error" in l][0][:160]))
    if rc == 2 and not san:
        if "HDF5-DIAG" in err:
            P.append(("stderr", f"exit 2 with the HDF5 error stack on stderr ({len(lines)} lines)"))
        elif len(lines) != 1:
            P.append(("stderr", f"exit 2 with {len(lines)} stderr lines" + (f": {lines[0][:120]}" if lines else "")))
        elif CASE not in lines[0]:
            P.append(("stderr", f"exit 2, the line does not name {CASE}: {lines[0][:160]}"))
    if rc == 0 and expect == "refuse":
        P.append(("accepted", f"exit 0 on a file the contract refuses (rule {r.get('rule', '?')})"))
    if expect == "accept" and base and not res["hung"] and rc >= 0:
        if rc != base["rc"]:
            P.append(("legit", f"exit {rc} where the unmutated seed gives {base['rc']}: " + (lines[0][:160] if lines else "")))
        elif rc == 0 and r.get("same_output"):
            if res["out"] != base["out"]:
                P.append(("legit", "stdout differs from the unmutated seed's"))
            elif base.get("summary") is not None and res["outputs"].get("summary.json") != base["summary"]:
                P.append(("legit", "summary differs from the unmutated seed's"))
    for where, data in (("stdout", out_b), ("stderr", err_b)):
        found = control_bytes(data)
        if found:
            P.append(("control", f"raw control bytes on {where}: {', '.join(found)}"))
    outs = sorted(res["outputs"])
    if rc != 0 and outs:
        P.append(("output", f"output left on exit {rc}: {', '.join(outs)[:200]}"))
    if rc == 0:
        want = OUTPUTS.get(res["command"])
        if want and want not in res["outputs"]:
            P.append(("output", f"exit 0 without {want}"))
        if res["command"].startswith("plot_") and not any(o.endswith(".png") for o in outs):
            P.append(("output", "exit 0 without a plot"))
        if "summary.json" in res["outputs"]:
            try:
                json.loads(res["outputs"]["summary.json"])
            except ValueError as e:
                P.append(("output", f"summary.json is not UTF-8 JSON ({type(e).__name__})"))
        page = res["outputs"].get("page.html", b"")
        if M.PAYLOADS["script"] in page or M.PAYLOADS["html"] in page:
            P.append(("html", "markup from the file unescaped in the page"))
    tmp = [f for f in outs if TMP_RE.search(os.path.basename(f))]
    tmp += [f for f in res["after"] if TMP_RE.search(os.path.basename(f))]
    if tmp:
        P.append(("temp", "temporary left: " + ", ".join(sorted(tmp))[:200]))
    if res["after"] != res["before"]:
        changed = sorted(k for k in set(res["after"]) | set(res["before"]) if res["after"].get(k) != res["before"].get(k))
        P.append(("input", "input folder changed: " + ", ".join(changed)[:200]))
    return P


def normalize(msg):
    msg = re.sub(r"'[^']*'|\"[^\"]*\"", "'S'", msg)
    msg = re.sub(r"/[^\s:,)]+", "PATH", msg)
    msg = re.sub(r"\d+", "N", msg)
    return msg[:140]


def signature(r, command, problems, err=""):
    """[family:variant] command: the first (most serious) problem, with what varies from case to case
    (numbers, paths, quoted values, which control bytes) left out."""
    kind, msg = problems[0]
    if kind == "sanitizer":
        msg = "sanitizer " + oracle.signature("sanitizer", [msg], err)
    elif kind == "accepted":
        msg = f"exit 0 on a file the contract refuses (rule {r.get('rule', '?').split(':')[0]})"
    elif kind == "legit":
        msg = msg.split(": ")[0]
    elif kind == "signal":
        pass
    elif kind == "memory":
        msg = "peak RSS over the bound"
    elif kind == "control":
        msg = msg.split(":")[0]
    elif kind == "stderr":
        msg = re.sub(r"(lines)(: .*)$", r"\1", msg)
        msg = normalize(re.sub(r"(does not name \S+): .*", r"\1", msg))
    else:
        msg = normalize(re.sub(rf"\b{re.escape(CASE)}\b", "CASE", msg))
    return f"[{r['family']}:{r['variant']}] {cmd_group(command)}: {msg}"


# ---------------------------------------------------------------- baselines


def baseline(args, seeds, seed, command):
    """What the unmutated seed gives for this command (run in the case folder, so paths match)."""
    key = (seed, command)
    if key not in args.baselines:
        r = {"family": "baseline", "variant": "identity", "params": {}, "expect": "any", "seed": seed, "command": command}
        casedir = os.path.join(args.workdir, "case")
        materialize(seeds, dict(r, family="legit"), casedir, command)
        res = run_command(args, r, casedir, os.path.join(args.workdir, "out"), command)
        problems = judge(args, r, res, None)
        if problems:
            print(f"baseline {seed} {command}: " + "; ".join(m for _, m in problems), flush=True)
        args.baselines[key] = {"rc": res["rc"], "out": res["out"], "summary": res["outputs"].get("summary.json"),
                               "problems": problems, "res": res, "recipe": r}
    return args.baselines[key]


# ---------------------------------------------------------------- one case, findings, corpus


def run_recipe(args, seeds, r, command=None):
    """Builds and runs one recipe; returns the result with its problems and signature."""
    command = command or r["command"]
    casedir = os.path.join(args.workdir, "case")
    base = baseline(args, seeds, r["seed"], command) if r.get("expect") == "accept" else None
    try:
        materialize(seeds, r, casedir, command)
    except M.BuildError as e:
        return {"skipped": str(e), "problems": [], "signature": "", "command": command}
    except Exception as e:  # a mutation that h5py or HDF5 would not make: a fuzzer defect, said loudly
        why = f"BUILD ERROR {r['family']}:{r['variant']} {json.dumps(r['params'])[:300]}: {type(e).__name__}: {e}"
        print(why, flush=True)
        return {"skipped": why, "problems": [], "signature": "", "command": command}
    res = run_command(args, r, casedir, os.path.join(args.workdir, "out"), command)
    res["problems"] = judge(args, r, res, base)
    res["signature"] = signature(r, command, res["problems"], res["err"].decode("utf-8", "replace")) if res["problems"] else ""
    return res


def outcome(res):
    if res.get("skipped"):
        return "skipped"
    if res["hung"]:
        return "hang"
    return f"exit {res['rc']}" if res["rc"] >= 0 else f"signal {-res['rc']}"


def slug(sig):
    s = "".join(c if c.isalnum() or c in "-_." else "_" for c in sig)
    return re.sub(r"_+", "_", s)[:90].strip("_")


def save_finding(dest, casedir, r, res):
    os.makedirs(dest, exist_ok=True)
    case = os.path.join(casedir, CASE)
    if os.path.isfile(case) and not os.path.islink(case) and os.path.getsize(case) < (64 << 20):
        with open(case, "rb") as src, gzip.open(os.path.join(dest, CASE + ".gz"), "wb", 6) as out:
            shutil.copyfileobj(src, out)
    desc = dict(r, signature=res["signature"], problems=[m for _, m in res["problems"]], rc=res["rc"],
                stderr=res["err"].decode("utf-8", "replace")[-4000:], stdout_tail=res["out"].decode("utf-8", "replace")[-1500:],
                secs=round(res["secs"], 2), rss_mib=res["rss_kb"] >> 10, command_line=res["cmd"], status="open")
    with open(os.path.join(dest, "case.json"), "w") as f:
        json.dump(desc, f, indent=1)


def replay_corpus(args, seeds, known):
    """A corpus case marked fixed must pass; an open one is reported, its signatures known."""
    failed = 0
    if not args.corpus or not os.path.isdir(args.corpus):
        return 0
    for name in sorted(os.listdir(args.corpus)):
        path = os.path.join(args.corpus, name, "case.json")
        if not os.path.isfile(path):
            continue
        with open(path) as f:
            r = json.load(f)
        status = r.get("status", "open")
        if status == "open":
            known.update([r.get("signature", "")] + r.get("also_signatures", []))
        results = [run_recipe(args, seeds, r, c) for c in r.get("commands", [r["command"]])]
        bad = [x for x in results if x["problems"]]
        tag = f"{r.get('defect', '?')}"
        needs_san = any("sanitizer" in p for p in r.get("problems", [])) and not args.sanitized
        if all(x.get("skipped") for x in results):
            print(f"corpus {name}: skipped ({results[0]['skipped']})")
        elif not bad:
            print(f"corpus {name}: pass" + (" (marked open: mark it fixed)" if status == "open" and not needs_san else "")
                  + (f", but only a sanitizer build can tell ({tag})" if needs_san else ""))
        elif status == "open":
            for x in bad:
                known.add(x["signature"])
            print(f"corpus {name}: still open ({tag}): " + "; ".join(sorted({x['signature'] for x in bad})))
        else:
            failed += 1
            print(f"corpus {name}: FAIL (marked fixed, {tag}): " + "; ".join(sorted({x['signature'] for x in bad})))
            for x in bad:
                print("  " + "\n  ".join(m for _, m in x["problems"][:4]))
    return failed


# ---------------------------------------------------------------- main


def parse_weights(spec, table, what):
    if not spec:
        return dict(table)
    out = {}
    for item in spec.split(","):
        name, _, w = item.partition("=")
        if name not in table:
            sys.exit(f"--{what}: unknown {name} (known: {', '.join(sorted(table))})")
        out[name] = float(w) if w else table[name]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scan", required=True, help="straggler-scan binary")
    ap.add_argument("--sim", required=True, help="straggler-sim binary (seeds)")
    ap.add_argument("--scripts", default=os.path.join(ROOT, "scripts"), help="folder of report_html.py, plot_*.py, scan_tables.json")
    ap.add_argument("--workdir", help="work folder (default: a new one under /tmp); findings stay there")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=150)
    ap.add_argument("--first", type=int, default=0, help="index of the first case")
    ap.add_argument("--minutes", type=float, help="run this long instead of --cases")
    ap.add_argument("--case", type=int, help="build and run only this case (kept in WORKDIR/case), print it")
    ap.add_argument("--corpus", help="corpus of recipes to replay first (tests/fuzz/corpus/scan)")
    ap.add_argument("--replay-only", action="store_true")
    ap.add_argument("--families", help="families to draw, e.g. storage,strings or legit=1,path=1 (default weights: "
                    + ", ".join(f"{k} {w}" for k, (w, _) in M.FAMILIES.items()) + ")")
    ap.add_argument("--commands", help="commands to run, comma-separated: " + ", ".join(ALL_COMMANDS))
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--rss-mb", type=int, default=1024, help="peak RSS bound of a run (0: none)")
    ap.add_argument("--sanitized", action="store_true", help="a sanitizer build: no RSS bound, no address-space cap "
                    "(also detected from the binary)")
    ap.add_argument("--python", default=PYTHON)
    ap.add_argument("--verbose", action="store_true", help="a line per case")
    args = ap.parse_args()
    args.scan, args.sim, args.scripts = (os.path.abspath(p) for p in (args.scan, args.sim, args.scripts))
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="fuzz-scan-"))
    args.sanitized = args.sanitized or oracle.is_sanitized(args.scan)
    args.family_weights = parse_weights(args.families, {k: w for k, (w, _) in M.FAMILIES.items()}, "families")
    args.commands = set(args.commands.split(",")) if args.commands else set(ALL_COMMANDS)
    if args.commands - set(ALL_COMMANDS):
        sys.exit(f"--commands: unknown {', '.join(sorted(args.commands - set(ALL_COMMANDS)))}")
    args.env = child_env(args)
    args.baselines = {}
    os.makedirs(args.workdir, exist_ok=True)
    t0 = time.time()
    seeds = make_seeds(args)
    print(f"workdir {args.workdir}; seeds in {seeds['_dir']} ({time.time() - t0:.1f} s); "
          f"{'sanitizer build: no RSS bound' if args.sanitized else f'RSS bound {args.rss_mb} MiB'}", flush=True)
    known = set()
    corpus_failed = replay_corpus(args, seeds, known)
    if args.replay_only:
        return 1 if corpus_failed else 0

    seen, hits, outcomes = {}, collections.Counter(), collections.Counter()
    by_family = collections.defaultdict(collections.Counter)
    known_hits = collections.Counter()
    cases = 0
    t1 = time.time()
    indices = [args.case] if args.case is not None else range(args.first, 1 << 62)
    for i in indices:
        if args.case is None and (time.time() - t1 >= args.minutes * 60 if args.minutes else i >= args.first + args.cases):
            break
        r = draw_case(args, seeds, i)
        res = run_recipe(args, seeds, r)
        cases += 1
        fam = f"{r['family']}"
        oc = outcome(res)
        outcomes[oc] += 1
        by_family[fam][oc if not res["problems"] else "FAIL"] += 1
        if args.verbose or args.case is not None:
            print(f"case {i}: {r['family']}:{r['variant']} {r['seed']} {r['command']} -> {oc}"
                  + (f" ({res.get('secs', 0):.1f} s, {res.get('rss_kb', 0) >> 10} MiB)" if not res.get("skipped") else f" ({res['skipped']})")
                  + (f": {res['signature']}" if res["problems"] else ""), flush=True)
        if res["problems"]:
            sig = res["signature"]
            hits[sig] += 1
            if sig in known:
                known_hits[sig] += 1
            elif sig not in seen:
                seen[sig] = i
                dest = os.path.join(args.workdir, "findings", slug(sig))
                save_finding(dest, os.path.join(args.workdir, "case"), r, res)
                print(f"case {i}: NEW {sig}\n  " + "\n  ".join(m for _, m in res["problems"][:4]) + f"\n  saved in {dest}", flush=True)
        if args.case is not None:
            show = {k: v for k, v in res.items() if k not in ("out", "err", "before", "after", "outputs")}
            show["stderr"] = res.get("err", b"").decode("utf-8", "replace")[-3000:]
            show["stdout"] = res.get("out", b"").decode("utf-8", "replace")[-1500:]
            show["problems"] = [m for _, m in res.get("problems", [])]
            case = os.path.join(args.workdir, "case", CASE)
            if os.path.isfile(case):
                show["case_sha1"] = file_hash([case])
            print(json.dumps({"recipe": r, "result": show}, indent=1, default=str)[:20000])
        elif cases % 50 == 0:
            print(f"{cases} cases, {len(seen)} findings, {time.time() - t1:.0f} s", flush=True)
    span = f"case {args.case}" if args.case is not None else f"cases {args.first}-{args.first + cases - 1}"
    print(f"\n{cases} cases in {time.time() - t1:.0f} s (seed {args.seed}, {span})")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
    for fam in sorted(by_family, key=lambda k: -sum(by_family[k].values())):
        print(f"  {fam} ({sum(by_family[fam].values())}): " + ", ".join(f"{k} {v}" for k, v in by_family[fam].most_common()))
    for sig, n in sorted(known_hits.items()):
        print(f"known open (corpus): {sig} x{n}")
    print(f"findings: {len(seen)} new" + "".join(f"\n  case {i}: {s} (x{hits[s]})" for s, i in seen.items()))
    if corpus_failed:
        print(f"corpus: {corpus_failed} case(s) marked fixed fail again")
    return 1 if seen or corpus_failed else 0


if __name__ == "__main__":
    sys.exit(main())
