#!/usr/bin/python3
"""Mutation fuzzer for the nsys SQLite readers of straggler-scan (issues 8 and 17).

Most cases are a 2-rank run directory: one rank is a mutated seed (a small generated or real export),
the other a healthy generated rank. straggler-scan must then exit 0 or 2 (1 only for output
errors), say at most one line per failing file, print no sanitizer report, not hang, leave no
partial output, and with exit 0 analyse the healthy rank. Other case families (families.py, README)
cover extreme ids, journals and write-ahead logs beside a profile, per-host files with stray
processes, ranks named by process ids, linked or special inputs and outputs, and write faults;
each has its own expectations (oracle.expectations). Cases are deterministic: case i of --seed S is
always the same. Failures are saved (the case's files, gzipped, and case.json) under
WORKDIR/findings/<signature>/; copy one into tests/fuzz/corpus/ to replay it on every run.

  fuzz_nsys.py --scan BIN --sim BIN --workdir DIR [--cases N | --minutes M] [--seed S]
               [--real DIR] [--corpus DIR] [--replay-only] [--case I] [--kinds K,K] [--fault-lib SO]
               [--no-mpi]
Exit status: 0 when no new finding (findings matching an open corpus case are listed, not counted).
"""
import argparse
import collections
import gzip
import json
import os
import random
import shutil
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import families  # noqa: E402
import mutate  # noqa: E402
from families import healthy_source, victim_source  # noqa: E402,F401 (minimize.py uses them from here)
from oracle import is_sanitized, run_case  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Small real exports (../shared/data/real), used as the mutated rank when present; the 2-GPU files
# hold two rank processes in one file and would claim the healthy rank's number by design.
REAL_SEEDS = ["nsysai_mock_1gpu.sqlite", "nvfuser_report1_1gpu.sqlite"]


def make_seeds(args):
    """Seed name -> path of a victim file; 'healthy' -> directory of a 2-rank generated run;
    'perhost' -> node-00.sqlite of a 2-host run with per-host files (2 rank processes each)."""
    seeds = {}
    base = os.path.join(args.workdir, "seeds")
    small = ["--iterations", "4", "--microbatches", "1", "--layers", "1"]  # 120 kernels: 100 KB files
    for name, extra in (("gen", small), ("gen30", small + ["--schema", "3.0"]), ("genbig", ["--iterations", "3"])):
        out = os.path.join(base, name)
        if not os.path.exists(os.path.join(out, "rank_1.sqlite")):
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run([args.sim, out, "--layout", "1x1x2", "--hosts", "1"] + extra,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seeds[name] = os.path.join(out, "rank_0.sqlite")
        seeds[name + "_r1"] = os.path.join(out, "rank_1.sqlite")
    for f in REAL_SEEDS:
        p = os.path.join(args.real or "", f)
        if args.real and os.path.isfile(p):
            seeds["real:" + f] = p
    seeds["healthy"] = os.path.join(base, "gen")
    out = os.path.join(base, "perhost")
    if not os.path.exists(os.path.join(out, "node-01.sqlite")):
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([args.sim, out, "--layout", "2x1x2", "--hosts", "2", "--per-host-files"] + small,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.remove(os.path.join(out, "truth.json"))
    seeds["perhost"] = os.path.join(out, "node-00.sqlite")
    return seeds


VICTIM_SEEDS = lambda seeds: [n for n in seeds if n not in ("healthy", "perhost") and not n.endswith("_r1")]  # noqa: E731


def build_case(args, seeds, index, casedir):
    """Writes case `index` into casedir and returns its description. Its family comes from a stream of
    its own; a plain mutation case (kind "mutate") draws what it always drew: rank_V.sqlite
    mutated, the other rank healthy."""
    kind = families.pick_kind(args.seed, index, args.kind_weights)
    rng = random.Random(f"{args.seed}:{index}")
    if kind in families.DESCRIBE:
        for attempt in range(5):  # a description that cannot give its state here is drawn again (same stream)
            desc = families.DESCRIBE[kind](rng, seeds)
            desc.update(fuzz_seed=args.seed, case=index)
            try:
                materialize(seeds, desc, casedir)
                return desc
            except families.BuildError as e:
                if attempt == 4:
                    raise
                print(f"case {index}: {e}; drawn again", flush=True)
    names = VICTIM_SEEDS(seeds)
    weights = [{"gen": 4, "gen30": 2, "genbig": 1}.get(n, 1) for n in names]
    seed = rng.choices(names, weights)[0]
    victim = rng.choice([0, 1])
    os.makedirs(casedir)
    vpath = os.path.join(casedir, f"rank_{victim}.sqlite")
    shutil.copyfile(victim_source(seeds, seed, victim), vpath)
    shutil.copyfile(healthy_source(seeds, seed, victim), os.path.join(casedir, f"rank_{1 - victim}.sqlite"))
    if kind == "extreme_ids":
        ops = mutate.mutate(vpath, rng, mutate.EXTREME_MUTATIONS, raw=0)
    else:
        ops = mutate.mutate(vpath, rng)
    desc = {"seed": seed, "fuzz_seed": args.seed, "case": index, "victim": f"rank_{victim}.sqlite",
            "healthy": f"rank_{1 - victim}.sqlite", "ops": ops}
    if kind != "mutate":
        desc["kind"] = kind
    return desc


def materialize(seeds, desc, casedir):
    """Rebuilds a described case from the seeds and its recipe (for minimizing and replays)."""
    shutil.rmtree(casedir, ignore_errors=True)
    os.makedirs(casedir)
    kind = desc.get("kind", "mutate")
    if kind in families.MAKE:
        families.MAKE[kind](seeds, desc, casedir)
        return
    victim = int(desc["victim"][5])
    shutil.copyfile(victim_source(seeds, desc["seed"], victim), os.path.join(casedir, desc["victim"]))
    shutil.copyfile(healthy_source(seeds, desc["seed"], victim), os.path.join(casedir, desc["healthy"]))
    mutate.apply_ops(os.path.join(casedir, desc["victim"]), desc["ops"])


def regular_files(d):
    """Relative paths of the plain files under d (links, FIFOs, devices are rebuilt from case.json)."""
    out = []
    for root, dirs, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            if stat.S_ISREG(os.lstat(p).st_mode):
                out.append(os.path.relpath(p, d))
    return sorted(out)


def save_case(dest, casedir, desc, result):
    os.makedirs(dest, exist_ok=True)
    for f in regular_files(casedir):
        os.makedirs(os.path.dirname(os.path.join(dest, f + ".gz")), exist_ok=True)
        with open(os.path.join(casedir, f), "rb") as src, gzip.open(os.path.join(dest, f + ".gz"), "wb", 9) as out:
            shutil.copyfileobj(src, out)
    desc = dict(desc, signature=result["signature"], problems=result["problems"], rc=result["rc"],
                stderr=result["stderr"][-6000:], status="open")
    if result.get("cmd"):
        desc["command"] = result["cmd"]
    with open(os.path.join(dest, "case.json"), "w") as f:
        json.dump(desc, f, indent=1)


def load_corpus_case(src, casedir):
    os.makedirs(casedir)
    for f in regular_files(src):
        if f.endswith(".gz"):
            os.makedirs(os.path.dirname(os.path.join(casedir, f[:-3])), exist_ok=True)
            with gzip.open(os.path.join(src, f)) as i, open(os.path.join(casedir, f[:-3]), "wb") as o:
                shutil.copyfileobj(i, o)
    with open(os.path.join(src, "case.json")) as f:
        desc = json.load(f)
    families.make_tree(desc, casedir)
    return desc


def replay_corpus(args, open_sigs, run=None, unproven=None, known_open=False):
    """Replays a corpus: a case marked fixed must pass; an open one is reported. The Kineto fuzzer
    shares it: `run(casedir, desc, outdir)` runs a case (default: oracle's run_case), `unproven(desc,
    res)` names why a pass proves nothing on this build ("" when it does; default: a sanitizer
    finding seen on a release build), and known_open counts every open case's signatures as known
    whether or not this build shows them."""
    def default_run(casedir, desc, outdir):
        return run_case(args.scan, casedir, desc["healthy"], args.timeout, outdir, desc=desc, tools=args.tools)

    def default_unproven(desc, res):
        needs_san = any(p.startswith("sanitizer") for p in desc.get("problems", []))
        return "only a sanitizer build can tell" if needs_san and not is_sanitized(args.scan) else ""

    run, unproven = run or default_run, unproven or default_unproven
    failed = 0
    if not args.corpus or not os.path.isdir(args.corpus):
        return 0
    for name in sorted(os.listdir(args.corpus)):
        src = os.path.join(args.corpus, name)
        if not os.path.isfile(os.path.join(src, "case.json")):
            continue
        casedir = os.path.join(args.workdir, "replay", name)
        shutil.rmtree(casedir, ignore_errors=True)
        desc = load_corpus_case(src, casedir)
        res = run(casedir, desc, os.path.join(args.workdir, "replay-out"))
        status = desc.get("status", "open")
        if status == "open" and known_open:
            open_sigs.update([desc.get("signature", "")] + desc.get("also_signatures", []))
        why = unproven(desc, res) if res["ok"] else ""
        if res.get("skipped"):
            print(f"corpus {name}: skipped ({res['skipped']})")
        elif why:
            print(f"corpus {name}: pass, but {why} ({desc.get('defect', '?')})")
        elif res["ok"]:
            print(f"corpus {name}: pass" + (" (marked open: mark it fixed)" if status == "open" else ""))
        elif status == "open":
            open_sigs.add(res["signature"])
            print(f"corpus {name}: still open ({desc.get('defect', '?')}): {res['signature']}")
        else:
            failed += 1
            print(f"corpus {name}: FAIL (marked fixed): {res['signature']}\n  " + "\n  ".join(res["problems"]))
        shutil.rmtree(casedir, ignore_errors=True)
    return failed


def find_fault_lib(scan):
    """libwrite_faults.so beside the binary or in the build tree's tests/ (scan in BUILD/src/)."""
    d = os.path.dirname(os.path.abspath(scan))
    for p in (os.path.join(d, "libwrite_faults.so"), os.path.join(d, "..", "tests", "libwrite_faults.so")):
        if os.path.isfile(p):
            return os.path.abspath(p)
    return None


def uses_mpi(scan):
    try:
        out = subprocess.run(["ldd", scan], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "libmpi" in out


def parse_kinds(spec):
    """--kinds: a comma list of families (only these, at their usual weights relative to each other),
    or KIND=WEIGHT pairs."""
    if not spec:
        return dict(families.KIND_WEIGHTS)
    weights = {}
    for item in spec.split(","):
        name, _, w = item.partition("=")
        if name not in families.KIND_WEIGHTS:
            sys.exit(f"--kinds: unknown family {name} (known: {', '.join(families.KIND_WEIGHTS)})")
        weights[name] = float(w) if w else families.KIND_WEIGHTS[name]
    return weights


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scan", required=True)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--real", help="folder of real exports (skipped when absent)")
    ap.add_argument("--corpus", help="corpus of saved cases to replay first")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--first", type=int, default=0, help="index of the first case")
    ap.add_argument("--minutes", type=float, help="run until this much time has passed instead of --cases")
    ap.add_argument("--case", type=int, help="run only this case and keep its directory")
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--replay-only", action="store_true")
    ap.add_argument("--kinds", help="case families to draw, e.g. journal,links or mutate=1,write_fault=1 "
                    f"(default: all, weights {', '.join(f'{k} {v}' for k, v in families.KIND_WEIGHTS.items())}); "
                    "a case's content does not depend on this, only which indices hold which family")
    ap.add_argument("--fault-lib", help="libwrite_faults.so for the write_fault cases (default: found beside "
                    "the binary or in BUILD/tests/; without it those cases are skipped)")
    ap.add_argument("--mpirun", default=shutil.which("mpirun"), help="mpirun for the write_fault cases run "
                    "under MPI (default: the one on PATH, when the binary links MPI)")
    ap.add_argument("--no-mpi", action="store_true", help="skip the cases that run under mpirun")
    args = ap.parse_args()
    args.workdir = os.path.abspath(args.workdir)
    args.kind_weights = parse_kinds(args.kinds)
    fault_lib = os.path.abspath(args.fault_lib) if args.fault_lib else find_fault_lib(args.scan)
    mpirun = None if args.no_mpi or not args.mpirun or not uses_mpi(args.scan) else args.mpirun
    args.tools = {"fault_lib": fault_lib, "mpirun": mpirun}
    os.makedirs(args.workdir, exist_ok=True)
    t0 = time.time()
    open_sigs = set()
    corpus_failed = replay_corpus(args, open_sigs)
    if args.replay_only:
        return 1 if corpus_failed else 0
    seeds = make_seeds(args)
    print(f"seeds: {', '.join(n for n in seeds if n != 'healthy' and not n.endswith('_r1'))}; "
          f"fault library: {fault_lib or 'none (write_fault cases skipped)'}; mpirun: {mpirun or 'no'}", flush=True)

    mix, seen, known, outcomes = collections.Counter(), {}, collections.Counter(), collections.Counter()
    by_kind = collections.defaultdict(collections.Counter)  # family -> outcome -> cases
    hits = collections.Counter()  # cases per failure signature
    cases = 0
    indices = [args.case] if args.case is not None else range(args.first, 1 << 62)
    for i in indices:
        if args.case is None and (time.time() - t0 >= args.minutes * 60 if args.minutes else i >= args.first + args.cases):
            break
        casedir = os.path.join(args.workdir, "case")
        shutil.rmtree(casedir, ignore_errors=True)
        desc = build_case(args, seeds, i, casedir)
        kind = desc.get("kind", "mutate")
        if kind in ("mutate", "extreme_ids"):
            for op in desc["ops"]:
                mix[op["kind"]] += 1
        else:
            mix[f"{kind}:{desc['variant']}"] += 1
        res = run_case(args.scan, casedir, desc["healthy"], args.timeout, os.path.join(args.workdir, "out"),
                       desc=desc, tools=args.tools)
        cases += 1
        outcomes[res["outcome"]] += 1
        by_kind[kind][res["outcome"] if res["ok"] or res.get("skipped") else "FAIL: " + res["signature"][:60]] += 1
        if not res["ok"]:
            sig = res["signature"]
            hits[sig] += 1
            if sig in open_sigs:
                known[sig] += 1
            elif sig not in seen:
                seen[sig] = i
                dest = os.path.join(args.workdir, "findings", slug(sig))
                save_case(dest, casedir, desc, res)
                print(f"case {i}: NEW {sig}\n  " + "\n  ".join(res["problems"][:4]) + f"\n  saved in {dest}", flush=True)
        if args.case is not None:
            print(json.dumps({"desc": desc, "result": res}, indent=1)[:20000])
        elif cases % 100 == 0:
            print(f"{cases} cases, {len(seen)} findings, {time.time() - t0:.0f} s", flush=True)
    print(f"\n{cases} cases in {time.time() - t0:.0f} s (seed {args.seed}, cases {args.first}-{args.first + cases - 1})")
    print("mutation mix: " + ", ".join(f"{k} {v}" for k, v in sorted(mix.items(), key=lambda kv: -kv[1])))
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
    for kind in sorted(by_kind, key=lambda k: -sum(by_kind[k].values())):
        print(f"  {kind} ({sum(by_kind[kind].values())}): " + ", ".join(f"{k} {v}" for k, v in by_kind[kind].most_common()))
    for sig, n in known.items():
        print(f"known open (corpus): {sig} x{n}")
    print(f"findings: {len(seen)} new" + "".join(f"\n  case {i}: {s} (x{hits[s]})" for s, i in seen.items()))
    if corpus_failed:
        print(f"corpus: {corpus_failed} case(s) marked fixed fail again")
    return 1 if seen or corpus_failed else 0


def slug(sig):
    s = "".join(c if c.isalnum() or c in "-_." else "_" for c in sig)
    return s[:80].strip("_")


if __name__ == "__main__":
    sys.exit(main())
