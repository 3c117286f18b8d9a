#!/usr/bin/python3
"""Each problem's one cost against the generator's counterfactual (issue 23, docs/costs.md).

For each case the generator writes a run with one fault and the same seed without it; the summary's
`cost_ms_per_step` of the planted straggler (or slow link) must be within --tolerance of what the
fault costs the job: the faulty run's mean step less the healthy run's (both the what-if window's
measured mean step, `what_if.step_ms_actual`). The counterfactual is the generator's, never the
analyser's.

  tests/cost_counterfactual.py --scan-bin B --sim-bin S [--sizes 32,512] [--kinds all] [--workdir D]
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
SIZES = {  # ranks: layout and hosts (8 GPUs a host)
    32: ["--layout", "2x2x8", "--hosts", "4"],
    512: ["--layout", "2x4x64", "--hosts", "64", "--iterations", "12"],
    4096: ["--layout", "2x4x512", "--hosts", "512", "--iterations", "8"],
}
# kind: (fault for a run of `ranks` ranks, what the summary lists it under)
KINDS = {
    "slow_gpu": (lambda n: f"slow_gpu:{n // 2 + 5}:1:1.3", "stragglers"),
    "host_delay": (lambda n: f"host_delay:{n // 8 + 1}:1:15", "stragglers"),  # stage 0: not hidden in the fill
    "extra_work": (lambda n: f"extra_work:{n - 3}:1:1.3", "stragglers"),
    "slow_link": (lambda n: "slow_link:0:1:3", "slow_links"),  # hosts by index
}


def run(cmd, log):
    with open(log, "w") as out:
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=1800).returncode


def scan(args, d, opts, faults):
    if not os.path.exists(d + ".json"):
        cmd = [args.sim_bin, d] + opts + NOISE
        for f in faults:
            cmd += ["--fault", f]
        if run(cmd, d + ".sim.log") != 0:
            raise RuntimeError(f"{d}: the generator failed ({d}.sim.log)")
        if run([args.scan_bin, d, "-o", d + ".h5", "--summary", d + ".json"], d + ".scan.log") != 0:
            raise RuntimeError(f"{d}: the scan failed ({d}.scan.log)")
        shutil.rmtree(d, ignore_errors=True)  # the profiles: large at 4096 ranks
    with open(d + ".json") as f:
        return json.load(f)


def check(args, work, ranks, kind, seed):
    fault_of, key = KINDS[kind]
    fault = fault_of(ranks)
    opts = SIZES[ranks] + ["--seed", str(seed)]
    healthy = scan(args, os.path.join(work, f"h{ranks}_{seed}"), opts, [])
    faulty = scan(args, os.path.join(work, f"{kind}{ranks}_{seed}"), opts, [fault])
    truth = faulty["what_if"]["step_ms_actual"] - healthy["what_if"]["step_ms_actual"]
    label = f"{kind} at {ranks} ranks ({fault})"
    if key == "stragglers":
        want = int(fault.split(":")[1])
        found = [s for s in faulty["stragglers"] if s["rank"] == want]
    else:
        found = [l for l in faulty["slow_links"] if set(l["hosts"]) & {"node-00", "node-01"}]
    if not found:
        print(f"FAIL {label}: not found ({key}: {faulty[key]})")
        return [f"{label}: not found"]
    cost = found[0].get("cost_ms_per_step")
    if cost is None:
        print(f"FAIL {label}: no cost")
        return [f"{label}: no cost"]
    err = (cost - truth) / truth if truth > 0 else float("inf")
    # A fault the schedule hides (a late stage's delay inside the pipeline fill) costs nothing: there
    # the check is absolute, within 0.5% of the step.
    ok = abs(err) <= args.tolerance or abs(cost - truth) <= 0.005 * faulty["what_if"]["step_ms_actual"]
    print(f"{'ok  ' if ok else 'FAIL'} {label}: cost {cost:.2f} ms per step ({found[0].get('cost_pct', 0):.1f}%), "
          f"the run without it is {truth:.2f} ms per step faster ({100 * err:+.1f}%)")
    return [] if ok else [f"{label}: off by {100 * err:+.1f}%"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scan-bin", required=True)
    ap.add_argument("--sim-bin", required=True)
    ap.add_argument("--sizes", default="32")
    ap.add_argument("--kinds", default="all")
    ap.add_argument("--seeds", default="3")
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="costs-")
    os.makedirs(work, exist_ok=True)
    kinds = list(KINDS) if args.kinds == "all" else args.kinds.split(",")
    failed = []
    try:
        for ranks in [int(s) for s in args.sizes.split(",")]:
            for seed in [int(s) for s in args.seeds.split(",")]:
                for kind in kinds:
                    try:
                        failed += check(args, work, ranks, kind, seed)
                    except (RuntimeError, subprocess.TimeoutExpired, KeyError, TypeError) as e:
                        print(f"FAIL {kind} at {ranks}: {e}")
                        failed.append(f"{kind} at {ranks}: {e}")
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failed)} failed" if failed else "every cost within "
          f"{100 * args.tolerance:.0f}% of its counterfactual")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
