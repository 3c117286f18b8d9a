#!/usr/bin/python3
"""Pure-refactor check: runs two straggler-scan binaries on the same inputs and compares every HDF5
dataset and attribute and the summary JSON, allowing only the layout changes documented in
docs/hdf5-layout.md ("Layout changes in 0.2"). Exit 1 on any other difference.

usage: compare_outputs.py --old OLD_SCAN --new NEW_SCAN --sim SIM [--real DIR] [--workdir DIR]
Inputs: generated runs (straggler-sim; healthy, straggler with pipeline parallelism and random
conventions, hang, crash, no NCCL domain rows, shuffled rows) and, with --real, the 2-rank real captures.
"""
import argparse, json, os, shutil, subprocess, sys
import h5py, numpy as np

RUNS = {
    "healthy": "--layout 2x2x2 --hosts 2 --iterations 6 --seed 2",
    "straggler": "--layout 2x2x4 --hosts 4 --iterations 8 --fault slow_gpu:5:3:1.4 --conventions random --seed 4",
    "host_delay": "--layout 1x2x4 --hosts 2 --iterations 8 --fault host_delay:3:2:30 --clock-offset-ms 3 --seed 5 --shuffle-rows",
    "hang": "--layout 1x2x4 --hosts 2 --iterations 6 --fault hang:5:3 --conventions random --seed 11",
    "crash": "--layout 2x2x2 --hosts 2 --iterations 6 --fault crash:2:3 --conventions random --seed 5 --per-host-files",
    "no_domain": "--layout 2x2x2 --hosts 2 --iterations 5 --no-nccl-domain-create --seed 21 --fault extra_work:6:2:1.3",
}

# Documented renames (old path -> new path) and removals (issue 9).
RENAMED = {"/ranks/nsys_version": "/ranks/source_version", "/ranks/schema_version": "/ranks/source_schema",
           "/inputs/nsys_version": "/inputs/version", "/inputs/schema_version": "/inputs/schema"}
ADDED = {"/ranks/source_format", "/inputs/format"}
REMOVED = {"/collectives/ops/busbw_gbps"}
# Ragged lists: old comma-joined strings, new values + NAME_offsets.
RAGGED = {"/desync/missing_ranks", "/desync/blocked_ranks", "/capture_ended/ranks", "/slow_links/hosts",
          "/iterations/change_points/culprit_ranks"}


def items(f):
    out = {}
    f.visititems(lambda name, obj: out.__setitem__("/" + name, obj))
    out["/"] = f
    return out


def ragged_as_lists(f, path):
    if path + "_offsets" in f:
        vals, off = f[path][()], f[path + "_offsets"][()]
        return [[v.decode() if isinstance(v, bytes) else str(v) for v in vals[off[i]:off[i + 1]]] for i in range(len(off) - 1)]
    return [[x for x in (s.decode() if isinstance(s, bytes) else s).split(",") if x] for s in f[path][()]]


def same(a, b):
    if a.shape != b.shape: return False
    if a.dtype.kind in "SO" or b.dtype.kind in "SO": return [x for x in a.flat] == [x for x in b.flat]
    return np.array_equal(a, b, equal_nan=True) and a.dtype == b.dtype


def compare_h5(old, new):
    diffs = []
    with h5py.File(old, "r") as fo, h5py.File(new, "r") as fn:
        io, inn = items(fo), items(fn)
        for path, obj in io.items():
            if path in REMOVED: continue
            if any(path == r or path == r + "_offsets" for r in RAGGED):
                if path in RAGGED and ragged_as_lists(fo, path) != ragged_as_lists(fn, path): diffs.append(f"{path}: values differ")
                continue
            npath = RENAMED.get(path, path)
            if npath not in inn: diffs.append(f"{path}: missing in new"); continue
            nobj = inn[npath]
            if isinstance(obj, h5py.Dataset) and not same(obj[()] if obj.shape != () else np.array(obj[()]), nobj[()] if nobj.shape != () else np.array(nobj[()])):
                diffs.append(f"{path}: values differ")
            for k, v in obj.attrs.items():
                if path == "/" and k == "command_line": continue
                if k not in nobj.attrs: diffs.append(f"{path}@{k}: missing in new"); continue
                if not np.array_equal(np.asarray(v), np.asarray(nobj.attrs[k])) and path not in RENAMED: diffs.append(f"{path}@{k} differs")
        known = set(RENAMED.values()) | ADDED | {r + "_offsets" for r in RAGGED}
        for path in inn:
            if path not in io and path not in known: diffs.append(f"{path}: new dataset not documented here")
    return diffs


def compare_json(old, new):
    a, b = json.load(open(old)), json.load(open(new))
    return [] if a == b else ["summary JSON differs: keys " + ", ".join(k for k in set(a) | set(b) if a.get(k) != b.get(k))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True); ap.add_argument("--new", required=True); ap.add_argument("--sim", required=True)
    ap.add_argument("--real"); ap.add_argument("--workdir", default="/tmp/ss-compare")
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True); os.makedirs(a.workdir)
    inputs = {}
    for name, args in RUNS.items():
        d = os.path.join(a.workdir, name)
        subprocess.run([a.sim, d] + args.split(), check=True, stderr=subprocess.DEVNULL)
        inputs[name] = [d]
    if a.real and os.path.isdir(a.real):
        for n in ("nsysai_mfu_2gpu_before", "nsysai_mfu_2gpu_after", "nsysai_h100_2gpu_1s"):
            p = os.path.join(a.real, n + ".sqlite")
            if os.path.exists(p): inputs[n] = [p]
    bad = 0
    for name, ins in inputs.items():
        outs = {}
        for side, binary in (("old", a.old), ("new", a.new)):
            o = os.path.join(a.workdir, f"{name}-{side}")
            r = subprocess.run([binary] + ins + ["-o", o + ".h5", "--summary", o + ".json", "-q"], capture_output=True, text=True)
            outs[side] = (o, r.returncode, r.stderr)
        if outs["old"][1] != outs["new"][1]:
            print(f"{name}: exit {outs['old'][1]} vs {outs['new'][1]}"); bad += 1; continue
        d = compare_h5(outs["old"][0] + ".h5", outs["new"][0] + ".h5") + compare_json(outs["old"][0] + ".json", outs["new"][0] + ".json")
        print(f"{name}: {'same' if not d else 'DIFFERENT'}")
        for x in d: print("   ", x)
        bad += bool(d)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
