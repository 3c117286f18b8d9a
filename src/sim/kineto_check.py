#!/usr/bin/python3
"""Checks a `straggler-sim --format kineto` run against the real Kineto samples and itself.

  src/sim/kineto_check.py RUN_DIR [--real DIR_OR_FILE ...]

Structure: every trace parses (gzip where .gz); top-level keys, distributedInfo keys, and per
category the event keys and arg keys are a subset of what the real samples (shared/data/real:
the 8-rank DLRM traces and HTA's nccl_data, 2024) show, per era (integer epoch us = 2023,
baseTimeNanoseconds = 2024); relative-time ts / dur have exactly 3 decimals.
Consistency: CPU ranges of a thread nest; a sorted trace is sorted by ts; per rank the kernel and nccl kernel counts equal truth.json; every kernel and copy
has a launch call of its correlation that starts no later; the ac2g flows pair up; the
ProfilerStep ranges do not overlap; ranks of one host share a boot-time base; matched TP / DP collectives (k-th kernel on the
communicator's stream) end within a few us on one clock (each host's NTP error from truth.json
removed). Exit 1 on any failure, one line each.
"""
import argparse
import collections
import glob
import gzip
import json
import os
import re
import sys
import tarfile

REAL = "/work/shared/data/real"


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read()


def shape(traces):
    """Per (ph, cat) the event keys and arg keys seen; top-level and distributedInfo keys."""
    ev_keys, arg_keys, top, dist = collections.defaultdict(set), collections.defaultdict(set), set(), set()
    for d in traces:
        top |= set(d)
        dist |= set(d.get("distributedInfo", {}))
        for e in d["traceEvents"]:
            k = (e.get("ph"), e.get("cat"))
            ev_keys[k] |= set(e)
            arg_keys[k] |= set(e.get("args", {}))
    return ev_keys, arg_keys, top, dist


def real_samples(extra):
    out = {"2023": [], "2024": []}
    tgz = os.path.join(REAL, "param/dlrm_kineto/dlrm_kineto.tar.gz")
    with tarfile.open(tgz) as t:
        for m in t.getmembers():
            if m.name.endswith(".json"):
                out["2023"].append(json.load(t.extractfile(m)))
    for p in glob.glob(os.path.join(REAL, "hta/trace_filter_sampled/*.json.gz")):
        out["2023"].append(json.loads(load(p)))
    out["2024"].append(json.loads(load(os.path.join(REAL, "hta/nccl_parser_config/nccl_data.json.gz"))))
    for p in extra:
        d = json.loads(load(p))
        out["2024" if "baseTimeNanoseconds" in d else "2023"].append(d)
    return out


# What the simulator writes on purpose although no sample has it (SPEC.md "Kineto output").
ALLOWED_NEW = {("X", "cuda_driver"): {"ph", "cat", "name", "pid", "tid", "ts", "dur", "args"}}
ALLOWED_ARGS = {("X", "cuda_driver"): {"External id", "cbid", "correlation"},
                ("X", "gpu_user_annotation"): {"External id"},
                # 2023 + record_shapes and 2024 metadata may meet in one trace
                ("X", "cpu_op"): {"Input Dims", "Input type"}, ("X", "user_annotation"): {"Input Dims", "Input type"},
                ("X", "kernel"): set()}


def compare_shapes(ours, real, era, fails):
    ev, args, top, dist = shape(ours)
    rev, rargs, rtop, rdist = shape(real)
    if top - rtop - {"record_shapes"}:  # a profiler option, whatever the year
        fails.append(f"{era}: top-level keys not in the samples: {sorted(top - rtop - {'record_shapes'})}")
    if dist - rdist:
        fails.append(f"{era}: distributedInfo keys not in the samples: {sorted(dist - rdist)}")
    for k in sorted(ev, key=str):
        if k not in rev and k not in ALLOWED_NEW:
            fails.append(f"{era}: event kind {k} not in the samples")
            continue
        extra = ev[k] - rev.get(k, set()) - ALLOWED_NEW.get(k, set())
        if extra:
            fails.append(f"{era}: {k} event keys not in the samples: {sorted(extra)}")
        aextra = args[k] - rargs.get(k, set()) - ALLOWED_ARGS.get(k, set())
        if aextra:
            fails.append(f"{era}: {k} arg keys not in the samples: {sorted(aextra)}")
    return {str(k): sorted(rargs.get(k, set()) - args[k]) for k in ev if rargs.get(k, set()) - args[k]}


def unix_ns(d, ts):
    if "baseTimeNanoseconds" in d:
        return d["baseTimeNanoseconds"] + round(ts * 1000)
    return ts * 1000


def check_rank(d, truth, fails, name):
    rank = d["distributedInfo"]["rank"]
    evs = d["traceEvents"]
    kern = [e for e in evs if e.get("cat") == "kernel"]
    nccl = [e for e in kern if e["name"].startswith("nccl")]
    pr = truth["per_rank"][rank]
    if (len(kern), len(nccl)) != (pr["kernels"], pr["nccl_kernels"]):
        fails.append(f"{name}: {len(kern)} kernels / {len(nccl)} nccl, truth {pr['kernels']} / {pr['nccl_kernels']}")
    calls = {}
    for e in evs:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            calls.setdefault(e["args"]["correlation"], e)
    for e in evs:
        if e.get("cat") in ("kernel", "gpu_memcpy"):
            c = calls.get(e["args"]["correlation"])
            if c is None:
                fails.append(f"{name}: {e['cat']} without its launch (correlation {e['args']['correlation']})")
                break
            if e["ts"] < c["ts"]:
                fails.append(f"{name}: {e['name'][:40]} starts before its launch")
                break
    s = collections.Counter(e["id"] for e in evs if e.get("ph") == "s")
    f = collections.Counter(e["id"] for e in evs if e.get("ph") == "f" and e.get("pid") != d.get("_cpu_pid"))
    if any(i not in f for i in s):
        fails.append(f"{name}: ac2g flow start without an end")
    # CPU ranges of one thread nest (integer us: truncation may cost 1 us, as in real traces)
    tol = 1.0 if "baseTimeNanoseconds" not in d else 0.0015
    stacks = collections.defaultdict(list)
    for e in sorted((e for e in evs if e.get("ph") == "X" and isinstance(e.get("pid"), int) and e.get("cat") in
                     ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver")), key=lambda e: (e["ts"], -e["dur"])):
        st = stacks[(e["pid"], e["tid"])]
        while st and e["ts"] >= st[-1] - tol:
            st.pop()
        if st and e["ts"] + e["dur"] > st[-1] + tol:
            fails.append(f"{name}: {e['name']} at {e['ts']} overlaps its parent's end {st[-1]}")
            break
        st.append(e["ts"] + e["dur"])
    if truth["conventions"].get("event_order") == "sorted":
        ts = [e["ts"] for e in evs]
        if any(b < a for a, b in zip(ts, ts[1:])):
            fails.append(f"{name}: event_order sorted, but ts go back")
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs if e.get("name", "").startswith("ProfilerStep#"))
    if any(b[0] < a[1] for a, b in zip(steps, steps[1:])):
        fails.append(f"{name}: ProfilerStep ranges overlap")
    return kern


def check_collectives(traces, truth, fails):
    """k-th kernel of each TP / DP communicator on its stream: ends within a few us on one clock."""
    conv = truth["conventions"]
    off = {h["name"]: h["clock_offset_ns"] for h in truth["hosts"]}
    host_of = {r["rank"]: r["host"] for r in truth["per_rank"]}
    streams = {r["rank"]: r["streams"] for r in conv["ranks"]}
    ends = {}
    for d, kern in traces:
        r = d["distributedInfo"]["rank"]
        for slot in ("tp", "dp"):
            sid = streams[r].get(slot)
            ks = sorted((e for e in kern if e["args"]["stream"] == sid and e["name"].startswith("nccl")), key=lambda e: e["ts"])
            ends[(r, slot)] = [unix_ns(d, e["ts"] + e["dur"]) - off[host_of[r]] for e in ks]
    worst = 0
    for c in truth["communicators"]:
        if c["kind"] not in ("tp", "dp"):
            continue
        seqs = [ends.get((r, c["kind"]), []) for r in c["ranks"]]
        for k in range(min(len(x) for x in seqs)):
            worst = max(worst, max(x[k] for x in seqs) - min(x[k] for x in seqs))
    # --clock-drift-ppm: a host's clock runs fast from each capture's start (up to ~3.5 s before an event)
    tol = 5000 + max(abs(h.get("clock_drift_ppm", 0)) for h in truth["hosts"]) * 3500
    if worst > tol:
        fails.append(f"matched collectives end {worst / 1000:.1f} us apart (tolerance {tol / 1000:.1f} us)")
    return worst


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run")
    p.add_argument("--real", nargs="*", default=[])
    p.add_argument("-v", action="store_true", help="list the sample arg keys the run does not write")
    a = p.parse_args()
    truth = json.load(open(os.path.join(a.run, "truth.json")))
    fails, ours = [], {"2023": [], "2024": []}
    traces = []
    for fe in truth["files"]:
        path = os.path.join(a.run, fe["file"])
        text = load(path)
        d = json.loads(text)
        era = "2024" if "baseTimeNanoseconds" in d else "2023"
        if era == "2024" and re.search(r'"(ts|dur)": -?\d+(\.\d{0,2}|\.\d{4,})?[,\n]', text):
            fails.append(f"{fe['file']}: a relative ts / dur without exactly 3 decimals")
        if d["distributedInfo"]["rank"] != fe["ranks"][0]:
            fails.append(f"{fe['file']}: distributedInfo.rank {d['distributedInfo']['rank']} != {fe['ranks'][0]}")
        traces.append((d, check_rank(d, truth, fails, fe["file"])))
        ours[era].append(d)
    conv = truth["conventions"]
    if conv.get("base_time") == "host_boot":  # one boot time per host
        host_of = {r["rank"]: r["host"] for r in truth["per_rank"]}
        bases = collections.defaultdict(set)
        for fe in conv["files"]:
            bases[host_of[fe["rank"]]].add(fe["base_time_ns"])
        if any(len(b) > 1 for b in bases.values()):
            fails.append("base_time host_boot, but ranks of one host have different bases")
    real = real_samples(a.real)
    for era in ours:
        if ours[era]:
            missing = compare_shapes(ours[era], real[era], era, fails)
            if a.v:
                for k, v in missing.items():
                    print(f"{era} {k}: sample args not written: {v}")
    worst = check_collectives(traces, truth, fails)
    n = sum(len(d["traceEvents"]) for d, _ in traces)
    for f in fails:
        print("FAIL", f)
    print(f"kineto_check: {len(traces)} traces, {n} events, matched collectives end within {worst / 1000:.2f} us, "
          f"{len(fails)} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
