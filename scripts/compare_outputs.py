#!/usr/bin/python3
"""Compare the HDF5, summary JSON and report of two straggler-scan binaries on the same inputs.

Runs both binaries on: the demo run, a healthy and a straggler generated run with pipeline
parallelism, and the 2-rank real captures in ../shared/data/real; then compares every dataset
(values, dtype, shape) and attribute, the summary JSON and the printed report, modulo the layout changes of 0.2
documented in docs/hdf5-layout.md ("Layout changes in 0.2"):
  - /ranks: nsys_version -> source_version, schema_version -> source_schema, new source_format;
    /inputs: nsys_version -> version, schema_version -> schema, new format; the report's header
    names the format ("nsys-sqlite 2024.6 (schema 3.16)" for "nsys 2024.6 (schema 3.16)");
  - /collectives/ops/busbw_gbps dropped;
  - comma-joined ragged lists became NAME + NAME_offsets.
The summary's `exchange_bytes` (bytes the processes sent each other; 0 with one process) measures
the wire encoding, not a result: with --np > 1 its difference is printed as a note, not counted.

Usage: compare_outputs.py --old OLD/straggler-scan --new NEW/straggler-scan --sim straggler-sim
                          [--workdir DIR] [--np N] [--real DIR]
Exit status 0 when everything matches, 1 otherwise (each difference printed).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

RENAMED = {  # new name -> old name
    "/ranks/source_version": "/ranks/nsys_version",
    "/ranks/source_schema": "/ranks/schema_version",
    "/inputs/version": "/inputs/nsys_version",
    "/inputs/schema": "/inputs/schema_version",
}
NEW_ONLY = {"/ranks/source_format", "/inputs/format",
            # 0.3 (issue 19: a scan read back from its HDF5): what the report says that no table held
            "/collectives/communicators/member_ops", "/collectives/communicators/member_ops_offsets",
            "/collectives/communicators/p2p", "/slow_links/communicators", "/slow_links/communicators_offsets",
            "/iterations/change_points/explanation", "/layout/tp", "/layout/pp", "/layout/dp", "/layout/order",
            "/layout/source", "/layout/consistency", "/layout/how", "/layout/notes", "/layout/notes_offsets",
            # issue 21: message size (NVTX payloads) and bus bandwidth per matched op
            "/collectives/ops/bytes", "/collectives/ops/busbw_gbps"}
NEW_GROUPS = {"/layout",
              # issue 20: the pipeline analysis
              "/pipeline", "/pipeline/windows", "/pipeline/stages", "/pipeline/flushes",
              # issue 21: the scaling analysis
              "/scaling", "/scaling/groups", "/scaling/rows",
              # issue 22: MFU
              "/mfu", "/mfu/iterations", "/mfu/phases", "/walls",
              # issue 22: what-if replay and waterfall
              "/what_if", "/waterfall", "/kernels/steady"}
NEW_PREFIXES = ("/pipeline/", "/scaling/", "/mfu/", "/walls/", "/what_if/", "/waterfall/", "/kernels/steady/")  # every dataset under these is new (issues 20-22)
NEW_SUMMARY_KEYS = {"pipeline", "scaling", "mfu", "walls", "what_if", "waterfall"}  # contract keys an analysis now fills (null or [] before)
NEW_ATTRS = {  # group -> attributes only the new file has (issue 19)
    "/": {"format_version"},
    "/clock": {"matched_ops", "unaligned_ranks", "distrusted_edges", "not_corrected_because",
               "far_clocks"},  # issue 36: hosts far apart, aligned by their collectives
    "/layout": {"notes"},  # issue 36: the layout notes also when the layout is unknown
    "/stragglers": {"judged_iterations", "compared_ranks", "needed_iterations"},
    "/collectives/communicators": {"exchange_bytes"},
}
DROPPED = {"/collectives/ops/busbw_gbps"}
RAGGED = {  # ragged list -> how the old file joined it
    "/desync/missing_ranks", "/desync/blocked_ranks", "/capture_ended/ranks", "/slow_links/hosts",
    "/iterations/change_points/culprit_ranks",
}
RAGGED_STRINGS = {"/slow_links/hosts"}


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def datasets(f):
    out = {}
    f.visititems(lambda name, obj: out.__setitem__("/" + name, obj) if isinstance(obj, h5py.Dataset) else None)
    return out


def groups(f):
    out = {"/"}
    f.visititems(lambda name, obj: out.add("/" + name) if isinstance(obj, h5py.Group) else None)
    return out


def attrs(obj, skip=()):
    """Attributes as comparable values: NaN as the string "nan" (NaN != NaN would make equal files differ)."""
    def value(v):
        v = text(v) if isinstance(v, bytes) else v.tolist() if isinstance(v, np.ndarray) else v
        return "nan" if isinstance(v, float) and v != v else v
    return {k: value(v) for k, v in obj.attrs.items() if k not in skip}


def same_values(a, b):
    if a.dtype.kind == "S" or b.dtype.kind == "S":
        return a.shape == b.shape and a.dtype == b.dtype and [text(x) for x in a.flat] == [text(x) for x in b.flat]
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def ragged_as_joined(new, path):
    values, offsets = new[path][()], new[path + "_offsets"][()]
    rows = []
    for i in range(len(offsets) - 1):
        part = values[offsets[i]:offsets[i + 1]]
        rows.append(",".join(text(x) for x in part))
    return rows


def compare_h5(old_path, new_path, diffs):
    with h5py.File(old_path, "r") as old, h5py.File(new_path, "r") as new:
        od, nd = datasets(old), datasets(new)
        if groups(old) - NEW_GROUPS != groups(new) - NEW_GROUPS:
            diffs.append(f"groups differ: {sorted((groups(old) - NEW_GROUPS) ^ (groups(new) - NEW_GROUPS))}")
        for g in groups(old) & groups(new):
            # exchange_bytes: bytes the processes sent (wire encoding, not a result; issue 21 added
            # the communicator id to each stream summary).
            skip = ("command_line",) if g == "/" else ("exchange_bytes",) if g == "/collectives/communicators" else ()
            # Attributes added since: skipped where the old file lacks them (a baseline may predate
            # them or not).
            added = tuple(a for a in NEW_ATTRS.get(g, ()) if a not in old[g].attrs)
            if attrs(old[g], skip) != attrs(new[g], tuple(skip) + added):
                diffs.append(f"{g}: attributes differ: {attrs(old[g], skip)} vs {attrs(new[g], skip)}")
        expected_new = set()
        for path, o in od.items():
            if path in DROPPED:
                continue
            if path in RAGGED and path + "_offsets" not in od:  # an old file from before 0.2
                expected_new |= {path, path + "_offsets"}
                if path not in nd or path + "_offsets" not in nd:
                    diffs.append(f"{path}: ragged list missing")
                    continue
                if [text(x) for x in o[()]] != ragged_as_joined(new, path):
                    diffs.append(f"{path}: ragged values differ")
                continue
            target = next((n for n, old_name in RENAMED.items() if old_name == path), path)
            expected_new.add(target)
            if target not in nd:
                diffs.append(f"{path}: missing in the new file (as {target})")
                continue
            n = nd[target]
            if not same_values(o[()] if o.shape != () else np.array(o[()]), n[()] if n.shape != () else np.array(n[()])):
                diffs.append(f"{path}: values differ ({o.dtype}{o.shape} vs {n.dtype}{n.shape})")
            if target == path and attrs(o) != attrs(n):
                diffs.append(f"{path}: attributes differ: {attrs(o)} vs {attrs(n)}")
        extra = {p for p in set(nd) - expected_new - NEW_ONLY if not p.startswith(NEW_PREFIXES)}
        if extra:
            diffs.append(f"datasets only in the new file: {sorted(extra)}")


def compare_json(old_path, new_path, diffs):
    with open(old_path, "rb") as a, open(new_path, "rb") as b:
        if a.read() != b.read():  # key order and number text too (a byte-identical summary is the aim)
            print(f"  note: {os.path.basename(new_path)}: the summaries' bytes differ (values compared below)")
    with open(old_path) as a, open(new_path) as b:
        old, new = json.load(a), json.load(b)

    def walk(x, y, where):
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y)):
                if k == "command_line":
                    continue
                if k == "exchange_bytes" and where == "" and k in x and k in y:
                    if x[k] != y[k]:
                        print(f"  note: exchange_bytes {x[k]} vs {y[k]} (wire encoding, not a result)")
                    continue
                if where == "" and k in NEW_SUMMARY_KEYS and x.get(k) in (None, []) and y.get(k) not in (None, []):
                    continue  # filled by a newer analysis where the old binary wrote the contract's null
                if where == "" and k in NEW_SUMMARY_KEYS and k not in x:
                    continue  # a key the old binary did not write at all (issue 22: mfu)
                if k not in x or k not in y:
                    diffs.append(f"summary {where}.{k}: only in {'new' if k in y else 'old'}")
                else:
                    walk(x[k], y[k], f"{where}.{k}")
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (p, q) in enumerate(zip(x, y)):
                walk(p, q, f"{where}[{i}]")
        elif x != y:
            diffs.append(f"summary {where}: {x!r} vs {y!r}")

    walk(old, new, "")


def without_new_sections(report):
    """The report less the sections of analyses added since (issue 20: "pipeline:", issue 21:
    "collectives by size and span", and their indented lines), so the rest can be compared with an older binary's."""
    out, skip = [], False
    for line in report.split("\n"):
        if line in ("pipeline:", "MFU (model FLOPs utilisation):") or line.startswith(("collectives by size and span", "which wall", "post-mortem")):
            skip = True
            if out and out[-1] == "":
                out.pop()  # the blank line the section opens with
            continue
        if skip and line.startswith(" "):
            continue
        skip = False
        out.append(line)
    return "\n".join(out)


def run_scan(binary, run_dirs, out, np_):
    cmd = ([] if np_ <= 1 else ["mpirun", "--oversubscribe", "-n", str(np_)]) + [binary, *run_dirs, "-o",
                                                                                  out + ".h5", "--summary", out + ".json"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")  # containers run as root
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    return r.returncode, r.stdout


def cases(args, work):
    sim = args.sim_bin
    runs = {
        "demo": ["--layout", "2x2x8", "--hosts", "4", "--iterations", "20", "--seed", "7", "--clock-offset-ms", "3",
                 "--fault", "slow_gpu:13:8:1.4"],
        "healthy_pp": ["--layout", "2x4x2", "--hosts", "2", "--iterations", "12", "--seed", "3"],
        "straggler_pp": ["--layout", "1x4x2", "--hosts", "2", "--iterations", "12", "--seed", "5",
                         "--fault", "host_delay:5:4:3"],
        # Random conventions, crash, no NCCL domain rows, shuffled rows.
        "straggler_random": ["--layout", "2x2x4", "--hosts", "4", "--iterations", "8", "--fault", "slow_gpu:5:3:1.4",
                             "--conventions", "random", "--seed", "4"],
        "host_delay_shuffled": ["--layout", "1x2x4", "--hosts", "2", "--iterations", "8", "--fault", "host_delay:3:2:30",
                                "--clock-offset-ms", "3", "--seed", "5", "--shuffle-rows"],
        "crash": ["--layout", "2x2x2", "--hosts", "2", "--iterations", "6", "--fault", "crash:2:3", "--conventions",
                  "random", "--seed", "5", "--per-host-files"],
        "no_domain": ["--layout", "2x2x2", "--hosts", "2", "--iterations", "5", "--no-nccl-domain-create", "--seed", "21",
                      "--fault", "extra_work:6:2:1.3"],
        # Fill the tables with ragged lists: /desync, /capture_ended, /slow_links.
        "hang_pp": ["--layout", "1x4x2", "--hosts", "2", "--iterations", "12", "--seed", "6", "--fault", "hang:3:6"],
        "slow_link": ["--layout", "1x4x4", "--hosts", "4", "--iterations", "12", "--seed", "128",
                      "--fault", "slow_link:1:2:3"],
    }
    for name, opts in runs.items():
        d = os.path.join(work, name)
        subprocess.run([sim, d, *opts], check=True, stdout=subprocess.DEVNULL)
        yield name, [d]
    if os.path.isdir(args.real):
        for f in sorted(os.listdir(args.real)):
            if "2gpu" in f and f.endswith(".sqlite"):
                d = os.path.join(work, "real_" + f[:-7])
                os.makedirs(d, exist_ok=True)
                link = os.path.join(d, f)
                if not os.path.exists(link):
                    os.symlink(os.path.join(args.real, f), link)
                yield "real_" + f[:-7], [d]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", "--base-bin", dest="base_bin", required=True, help="the straggler-scan to compare with")
    p.add_argument("--new", "--new-bin", dest="new_bin", required=True)
    p.add_argument("--sim", "--sim-bin", dest="sim_bin", required=True, help="straggler-sim")
    p.add_argument("--workdir", "--work", dest="work", help="folder for runs and outputs (default: a temporary one, removed)")
    p.add_argument("--np", type=int, default=1, help="MPI processes per scan (1: no mpirun)")
    p.add_argument("--real", default=os.path.join(here, "..", "..", "shared", "data", "real"))
    args = p.parse_args()
    args.real = os.path.abspath(args.real)  # symlinked from the work folder
    work = args.work or tempfile.mkdtemp(prefix="compare-outputs-")
    os.makedirs(work, exist_ok=True)
    failed = 0
    try:
        for name, dirs in cases(args, work):
            diffs = []
            outs = {}
            for which, binary in (("old", args.base_bin), ("new", args.new_bin)):
                outs[which] = os.path.join(work, f"{name}.{which}")
                rc, log = run_scan(binary, dirs, outs[which], args.np)
                outs[which + "_rc"] = rc
                log = log.replace(outs[which], "OUT").replace(binary, "BIN")
                log = log.replace("nsys-sqlite ", "nsys ")  # 0.2 named the format
                # The bytes the processes exchanged are the wire encoding, not a result (issue 22: the
                # op records carry launch times for the what-if replay).
                log = re.sub(r"[0-9.]+ MB exchanged between processes", "N MB exchanged between processes", log)
                outs[which + "_log"] = without_new_sections(log)
            if outs["old_rc"] != outs["new_rc"]:
                diffs.append(f"exit status {outs['old_rc']} vs {outs['new_rc']}")
            if outs["old_log"] != outs["new_log"]:
                for which in ("old", "new"):  # kept for a diff
                    with open(outs[which] + ".report.txt", "w") as f:
                        f.write(outs[which + "_log"])
                diffs.append(f"the report (standard output and error) differs: diff {outs['old']}.report.txt {outs['new']}.report.txt")
            if os.path.exists(outs["old"] + ".h5") and os.path.exists(outs["new"] + ".h5"):
                compare_h5(outs["old"] + ".h5", outs["new"] + ".h5", diffs)
                compare_json(outs["old"] + ".json", outs["new"] + ".json", diffs)
            else:
                diffs.append("an output is missing")
            print(f"{name}: {'same' if not diffs else 'DIFFERENT'}")
            for d in diffs:
                print("  " + d)
            failed += bool(diffs)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
