#!/usr/bin/python3
"""Mutation fuzzer for the nsys SQLite readers of straggler-scan (issue 8).

Each case is a 2-rank run directory: one rank is a mutated seed (a small generated or real export),
the other a healthy generated rank. straggler-scan must then exit 0 or 2 (1 only for output
errors), say at most one line per failing file, print no sanitizer report, not hang, leave no
partial output, and with exit 0 analyse the healthy rank. Cases are deterministic: case i of
--seed S is always the same. Failures are saved (mutated files, gzipped, and case.json) under
WORKDIR/findings/<signature>/; copy one into tests/fuzz/corpus/ to replay it on every run.

  fuzz_nsys.py --scan BIN --sim BIN --workdir DIR [--cases N | --minutes M] [--seed S]
               [--real DIR] [--corpus DIR] [--replay-only] [--case I]
Exit status: 0 when no new finding (findings matching an open corpus case are listed, not counted).
"""
import argparse
import collections
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutate  # noqa: E402
from oracle import is_sanitized, run_case  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Small real exports (../shared/data/real), used as the mutated rank when present; the 2-GPU files
# hold two rank processes in one file and would claim the healthy rank's number by design.
REAL_SEEDS = ["nsysai_mock_1gpu.sqlite", "nvfuser_report1_1gpu.sqlite"]


def make_seeds(args):
    """Seed name -> path of a victim file; 'healthy' -> directory of a 2-rank generated run."""
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
    return seeds


def victim_source(seeds, seed, victim):
    return seeds[seed + "_r1"] if seed.startswith("gen") and victim == 1 else seeds[seed]


def healthy_source(seeds, seed, victim):
    run = os.path.dirname(seeds[seed]) if seed.startswith("gen") else seeds["healthy"]
    return os.path.join(run, f"rank_{1 - victim}.sqlite")


def build_case(args, seeds, index, casedir):
    """Writes case `index` into casedir: rank_V.sqlite mutated, the other rank healthy. Returns its description."""
    rng = random.Random(f"{args.seed}:{index}")
    names = [n for n in seeds if n not in ("healthy",) and not n.endswith("_r1")]
    weights = [{"gen": 4, "gen30": 2, "genbig": 1}.get(n, 1) for n in names]
    seed = rng.choices(names, weights)[0]
    victim = rng.choice([0, 1])
    os.makedirs(casedir)
    vpath = os.path.join(casedir, f"rank_{victim}.sqlite")
    shutil.copyfile(victim_source(seeds, seed, victim), vpath)
    shutil.copyfile(healthy_source(seeds, seed, victim), os.path.join(casedir, f"rank_{1 - victim}.sqlite"))
    ops = mutate.mutate(vpath, rng)
    return {"seed": seed, "fuzz_seed": args.seed, "case": index, "victim": f"rank_{victim}.sqlite",
            "healthy": f"rank_{1 - victim}.sqlite", "ops": ops}


def materialize(seeds, desc, casedir):
    """Rebuilds a described case from the seeds and its recipe (for minimizing)."""
    shutil.rmtree(casedir, ignore_errors=True)
    os.makedirs(casedir)
    victim = int(desc["victim"][5])
    shutil.copyfile(victim_source(seeds, desc["seed"], victim), os.path.join(casedir, desc["victim"]))
    shutil.copyfile(healthy_source(seeds, desc["seed"], victim), os.path.join(casedir, desc["healthy"]))
    mutate.apply_ops(os.path.join(casedir, desc["victim"]), desc["ops"])


def save_case(dest, casedir, desc, result):
    os.makedirs(dest, exist_ok=True)
    for f in sorted(os.listdir(casedir)):
        with open(os.path.join(casedir, f), "rb") as src, gzip.open(os.path.join(dest, f + ".gz"), "wb", 9) as out:
            shutil.copyfileobj(src, out)
    desc = dict(desc, signature=result["signature"], problems=result["problems"], rc=result["rc"],
                stderr=result["stderr"][-6000:], status="open")
    with open(os.path.join(dest, "case.json"), "w") as f:
        json.dump(desc, f, indent=1)


def load_corpus_case(src, casedir):
    os.makedirs(casedir)
    for f in os.listdir(src):
        if f.endswith(".gz"):
            with gzip.open(os.path.join(src, f)) as i, open(os.path.join(casedir, f[:-3]), "wb") as o:
                shutil.copyfileobj(i, o)
    with open(os.path.join(src, "case.json")) as f:
        return json.load(f)


def replay_corpus(args, open_sigs):
    """Replays tests/fuzz/corpus: a case marked fixed must pass; an open one is reported."""
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
        res = run_case(args.scan, casedir, desc["healthy"], args.timeout, os.path.join(args.workdir, "replay-out"))
        status = desc.get("status", "open")
        needs_san = any(p.startswith("sanitizer") for p in desc.get("problems", []))
        if res["ok"] and needs_san and not is_sanitized(args.scan):
            print(f"corpus {name}: pass, but only a sanitizer build can tell ({desc.get('defect', '?')})")
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
    args = ap.parse_args()
    args.workdir = os.path.abspath(args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    t0 = time.time()
    open_sigs = set()
    corpus_failed = replay_corpus(args, open_sigs)
    if args.replay_only:
        return 1 if corpus_failed else 0
    seeds = make_seeds(args)
    print(f"seeds: {', '.join(n for n in seeds if n != 'healthy' and not n.endswith('_r1'))}", flush=True)

    mix, seen, known, outcomes = collections.Counter(), {}, collections.Counter(), collections.Counter()
    hits = collections.Counter()  # cases per failure signature
    cases = 0
    indices = [args.case] if args.case is not None else range(args.first, 1 << 62)
    for i in indices:
        if args.case is None and (time.time() - t0 >= args.minutes * 60 if args.minutes else i >= args.first + args.cases):
            break
        casedir = os.path.join(args.workdir, "case")
        shutil.rmtree(casedir, ignore_errors=True)
        desc = build_case(args, seeds, i, casedir)
        for op in desc["ops"]:
            mix[op["kind"]] += 1
        res = run_case(args.scan, casedir, desc["healthy"], args.timeout, os.path.join(args.workdir, "out"))
        cases += 1
        outcomes[res["outcome"]] += 1
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
