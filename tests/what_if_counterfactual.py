#!/usr/bin/python3
"""The what-if replay against the generator's counterfactual (issue 22, docs/what-if.md).

For each case the generator writes the run with its fault(s) and the same seed without some or all
of them; the replay's "rank R at its peers' median" step time must be within --tolerance of the
measured step of the run without R's fault (and with the other faults), and each flagged rank must
be named. The counterfactual is the generator's own truth, never the analyser's.

  tests/what_if_counterfactual.py --scan-bin B --sim-bin S [--cases quick|all] [--workdir D] [--keep]
Exit 0 when every check passes; prints one line per check.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

NOISE = ["--noise", "0.05:3:0.02:0.02"]
# name, simulator options, faults by rank, conventions seeds (None: fixed conventions)
CASES = [
    ("slow_gpu", ["--layout", "2x2x8", "--seed", "3"], {5: "slow_gpu:5:1:1.3"}, [None, 11]),
    ("host_delay", ["--layout", "2x2x8", "--seed", "4"], {9: "host_delay:9:1:15"}, [None, 12]),
    ("extra_work", ["--layout", "2x2x8", "--seed", "5"], {20: "extra_work:20:1:1.3"}, [None, 13]),
    ("two", ["--layout", "2x2x8", "--seed", "6"], {5: "slow_gpu:5:1:1.3", 18: "host_delay:18:1:15"}, [None]),
    ("tp4_dp4", ["--layout", "4x1x4", "--seed", "8"], {6: "host_delay:6:1:10"}, [8]),
    ("dp_overlap", ["--layout", "2x2x8", "--seed", "10", "--dp-overlap"], {12: "slow_gpu:12:1:1.3"}, [None]),
    ("pp4_dp4", ["--layout", "1x4x4", "--seed", "9"], {5: "extra_work:5:1:1.3"}, [9]),
    ("late_onset", ["--layout", "2x2x8", "--seed", "14"], {17: "slow_gpu:17:8:1.3"}, [None, 14]),
]
QUICK = {"slow_gpu", "host_delay", "extra_work", "two"}


def run(cmd, log):
    with open(log, "w") as out:
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=600).returncode


def scan(args, work, name, opts, faults, scan_opts=()):
    d = os.path.join(work, name)
    cmd = [args.sim_bin, d] + opts + NOISE
    for f in faults:
        cmd += ["--fault", f]
    if run(cmd, d + ".sim.log") != 0:
        raise RuntimeError(f"{name}: the generator failed ({d}.sim.log)")
    if run([args.scan_bin, d, "-o", d + ".h5", "--summary", d + ".json", *scan_opts], d + ".scan.log") != 0:
        raise RuntimeError(f"{name}: the scan failed ({d}.scan.log)")
    with open(d + ".json") as f:
        return json.load(f)


def check_case(args, work, name, opts, faults):
    """Returns failed checks (strings); prints every check."""
    failed = []
    faulty = scan(args, work, name + "_f", opts, list(faults.values()))
    named = {s["rank"] for s in faulty["stragglers"]}
    rows = {tuple(c["ranks"]): c for c in (faulty["what_if"] or {}).get("changes", []) if c["kind"].startswith("fix_")}
    for rank in sorted(faults):
        if rank not in named:
            failed.append(f"{name}: rank {rank} not named (stragglers {sorted(named)})")
            continue
    subsets = [(r,) for r in sorted(faults)] + ([tuple(sorted(faults))] if len(faults) > 1 else [])
    for fixed in subsets:
        rest = [f for r, f in faults.items() if r not in fixed]
        truth = scan(args, work, f"{name}_without_{'_'.join(map(str, fixed))}", opts, rest)
        want = truth["what_if"]["step_ms_actual"] if truth["what_if"] else truth["step_ms"]["median"]
        row = rows.get(fixed)
        if row is None:
            failed.append(f"{name}: no what-if row fixing {list(fixed)}")
            continue
        err = row["step_ms"] / want - 1
        ok = abs(err) <= args.tolerance
        print(f"{'ok  ' if ok else 'FAIL'} {name}: fix {list(fixed)}: {row['step_ms']:.2f} ms, the run without "
              f"{'its fault' if len(fixed) == 1 else 'them'} {want:.2f} ms ({100 * err:+.2f}%), measured "
              f"{faulty['what_if']['step_ms_actual']:.2f} ms")
        if not ok:
            failed.append(f"{name}: fix {list(fixed)} off by {100 * err:+.2f}%")
    # The largest single contribution is the planted rank's (one fault).
    if len(faults) == 1:
        fixes = [c for c in faulty["what_if"]["changes"] if c["kind"] == "fix_rank"]
        best = min(fixes, key=lambda c: c["step_ms"]) if fixes else None
        if not best or best["ranks"] != list(faults):
            failed.append(f"{name}: the largest saving is not rank {list(faults)}")
    return failed


def check_balance(args, work, label, opts):
    """Stage 2 of 4 at 1.6x compute; balanced, every stage does the mean (1.15x): the truth."""
    faulty = scan(args, work, label + "_f", opts, ["stage_imbalance:2:1.6"])
    truth = scan(args, work, label + "_mean", opts, [f"stage_imbalance:{s}:1.15" for s in range(4)])
    rows = [c for c in (faulty["what_if"] or {}).get("changes", []) if c["kind"] == "balance_stages"]
    if not rows:
        return [f"{label}: no balance_stages row"]
    want = truth["what_if"]["step_ms_actual"]
    err = rows[0]["step_ms"] / want - 1
    ok = abs(err) <= args.tolerance
    print(f"{'ok  ' if ok else 'FAIL'} {label}: stages balanced {rows[0]['step_ms']:.2f} ms, the run with every stage at "
          f"the mean {want:.2f} ms ({100 * err:+.2f}%), measured {faulty['what_if']['step_ms_actual']:.2f} ms")
    return [] if ok else [f"{label}: balance off by {100 * err:+.2f}%"]


def check_mfu(args, work):
    """A late slow GPU on a run with a GPU name and model FLOPs: the MFU after fixing it is within
    2% of the MFU of the run without the fault; the report's post-mortem paragraph says so."""
    opts = ["--layout", "2x2x8", "--seed", "14", "--schema", "3.0", "--gpu-name", "NVIDIA H100 80GB HBM3",
            "--model-flops-per-step", "2e15"]
    flops = ["--model-flops-per-step", "2e15"]
    faulty = scan(args, work, "mfu_f", opts, ["slow_gpu:17:8:1.3"], flops)
    truth = scan(args, work, "mfu_h", opts, [], flops)
    want = truth["mfu"]["mfu"]
    fix = [c for c in faulty["what_if"]["changes"] if c["kind"] == "fix_rank" and c["ranks"] == [17]]
    if not fix or "mfu" not in fix[0]:
        return ["mfu: no MFU on the fix of rank 17"]
    err = fix[0]["mfu"] / want - 1
    ok = abs(err) <= 0.02
    print(f"{'ok  ' if ok else 'FAIL'} mfu: fixing rank 17 gives MFU {100 * fix[0]['mfu']:.2f}%, the run without the fault "
          f"{100 * want:.2f}% ({100 * err:+.2f}%), measured {100 * faulty['what_if']['mfu_actual']:.2f}%")
    with open(os.path.join(work, "mfu_f.scan.log")) as f:
        report = f.read()
    para = [line for line in report.splitlines() if line.startswith("post-mortem")]
    failed = [] if ok else [f"mfu: off by {100 * err:+.2f}%"]
    if not para or "MFU" not in para[0] or "rank 17 (slow_gpu) costs" not in para[0]:
        failed.append(f"mfu: the post-mortem paragraph does not name MFU and rank 17: {para[:1]}")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scan-bin", required=True)
    ap.add_argument("--sim-bin", required=True)
    ap.add_argument("--cases", choices=["quick", "all"], default="quick")
    ap.add_argument("--tolerance", type=float, default=0.03)
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="what-if-")
    os.makedirs(work, exist_ok=True)
    failed = []
    try:
        for name, opts, faults, conventions in CASES:
            if args.cases == "quick" and name not in QUICK:
                continue
            for cs in conventions:
                extra = [] if cs is None else ["--conventions", "random", "--conventions-seed", str(cs)]
                label = name if cs is None else f"{name}_conv{cs}"
                try:
                    failed += check_case(args, work, label, opts + extra, faults)
                except (RuntimeError, subprocess.TimeoutExpired, KeyError, TypeError) as e:
                    failed.append(f"{label}: {e}")
        try:
            failed += check_mfu(args, work)
        except (RuntimeError, subprocess.TimeoutExpired, KeyError, TypeError) as e:
            failed.append(f"mfu: {e}")
        for cs in [None, 21] if args.cases == "all" else [None]:
            extra = [] if cs is None else ["--conventions", "random", "--conventions-seed", str(cs)]
            label = "balance" if cs is None else f"balance_conv{cs}"
            try:
                failed += check_balance(args, work, label, ["--layout", "2x4x4", "--seed", "21"] + extra)
            except (RuntimeError, subprocess.TimeoutExpired, KeyError, TypeError) as e:
                failed.append(f"{label}: {e}")
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    for f in failed:
        print("FAIL", f)
    print(f"{'all checks passed' if not failed else str(len(failed)) + ' failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
