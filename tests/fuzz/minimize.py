#!/usr/bin/python3
"""Shrinks a saved finding to the fewest mutations that still give the same failure, and writes it
as a corpus case (gzipped rank files + case.json) to be checked in under tests/fuzz/corpus/.
Cases of the families without mutations (links, rank_names, write_fault) are rebuilt from their
description and checked as they are; a journal case's transaction is shrunk like a mutation.

  minimize.py --scan BIN --sim BIN --workdir DIR FINDING_DIR CORPUS_DIR/NAME [--defect D1] [--note TEXT]
"""
import argparse
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_nsys  # noqa: E402
from oracle import run_case  # noqa: E402


def candidates(op):
    """Smaller variants of one operation: fewer rows, fewer bits."""
    out = []
    sql = op.get("sql")
    if sql:
        last = sql[-1]
        m = re.search(r"rowid IN \(([\d,]+)\)", last)
        if m:
            for r in m.group(1).split(","):
                out.append(dict(op, sql=sql[:-1] + [last.replace(m.group(0), f"rowid = {r}")]))
        m = re.search(r"WHERE (rowid % \d+ = \d+|1)$", last)
        if m:
            for r in (1, 2, 3, 5, 8, 13, 21, 34, 55, 89):
                out.append(dict(op, sql=sql[:-1] + [last[:m.start(1)] + f"rowid = {r}"]))
        if len(sql) > 1:  # without the table rebuild (constraints) when it was not needed
            out.append(dict(op, sql=sql[-1:]))
    if op.get("raw") == "flip" and len(op["bits"]) > 1:
        bits = op["bits"]
        out += [dict(op, bits=bits[:len(bits) // 2]), dict(op, bits=bits[len(bits) // 2:])]
        out += [dict(op, bits=[b]) for b in bits]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scan", required=True)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--real")
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--defect", default="")
    ap.add_argument("--note", default="")
    ap.add_argument("--fault-lib", help="libwrite_faults.so (write_fault cases; default: found beside the binary)")
    ap.add_argument("--no-mpi", action="store_true", help="skip cases that run under mpirun")
    ap.add_argument("finding")
    ap.add_argument("dest")
    args = ap.parse_args()
    args.workdir = os.path.abspath(args.workdir)
    seeds = fuzz_nsys.make_seeds(args)
    mpirun = shutil.which("mpirun")
    tools = {"fault_lib": os.path.abspath(args.fault_lib) if args.fault_lib else fuzz_nsys.find_fault_lib(args.scan),
             "mpirun": None if args.no_mpi or not mpirun or not fuzz_nsys.uses_mpi(args.scan) else mpirun}
    casedir, outdir = os.path.join(args.workdir, "min-case"), os.path.join(args.workdir, "min-out")
    work = {}
    with open(os.path.join(args.finding, "case.json")) as f:
        desc = json.load(f)
    target = None  # the failure as this oracle names it (a saved signature may come from an older one)

    def fails(ops):
        d = dict(desc, ops=ops)
        try:
            fuzz_nsys.materialize(seeds, d, casedir)
        except Exception:  # a shortened recipe may no longer apply
            return None
        res = run_case(args.scan, casedir, d["healthy"], args.timeout, outdir, desc=d, tools=tools)
        return res if res["signature"] and res["signature"] == (target or res["signature"]) else None

    ops = desc.get("ops", [])
    work["res"] = fails(ops)
    if not work["res"]:
        sys.exit(f"{args.finding}: does not reproduce '{desc['signature']}' from its recipe")
    target = work["res"]["signature"]
    changed = True
    while changed:
        changed = False
        for i in range(len(ops)):  # drop whole operations
            trial = ops[:i] + ops[i + 1:]
            if trial and (r := fails(trial)):
                ops, work["res"], changed = trial, r, True
                break
        if changed:
            continue
        for i, op in enumerate(ops):  # shrink one operation
            for smaller in candidates(op):
                if r := fails(ops[:i] + [smaller] + ops[i + 1:]):
                    ops, work["res"], changed = ops[:i] + [smaller] + ops[i + 1:], r, True
                    break
            if changed:
                break
    final = dict(desc, ops=ops)
    fuzz_nsys.materialize(seeds, final, casedir)
    res = work["res"]
    shutil.rmtree(args.dest, ignore_errors=True)
    fuzz_nsys.save_case(args.dest, casedir, final, res)
    with open(os.path.join(args.dest, "case.json")) as f:
        saved = json.load(f)
    saved.update(defect=args.defect, note=args.note)
    with open(os.path.join(args.dest, "case.json"), "w") as f:
        json.dump(saved, f, indent=1)
    print(f"{args.dest}: {len(ops)} operation(s), {target}")
    for op in ops:
        print("  " + json.dumps(op)[:300])


if __name__ == "__main__":
    main()
