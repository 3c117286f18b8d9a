#!/usr/bin/python3
"""`straggler-scan compare` against truths it did not compute (issue 22, docs/compare.md).

1. Generated: a healthy run and the same seed with one kernel 1.5x slower on every rank
   (`slow_kernel:gemm_dgrad:1.5`): that kernel is the first significant change, and its delta is
   within 5% of the planted one (0.5 x its time per rank per step in the healthy run, counted
   from the healthy run's SQLite exports over the scan's steady windows).
2. Generated: healthy against healthy with another noise seed: no kernel change above the noise.
2b. Generated: the same seed with one GPU 1.3x slower (`slow_gpu:5:1:1.3`, issue 37): its GEMMs
   are the first changes, on rank 5, above every NCCL kernel (whose growth is waiting, listed
   apart as waiting for rank 5).
3. Real: the 2-rank captures before and after a change (../shared/data/real/nsysai_mfu_2gpu_*):
   every kernel name's count and time per rank per step equal what the raw CUPTI kernel table gives
   over each rank's steady window (from the scan's /iterations and /ranks), and the step time equals
   the scans' own job step. Skipped (exit 77) where that folder is absent.

  tests/compare_check.py --scan-bin B --sim-bin S --shared DIR [--workdir D]
"""
import argparse
import glob
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

import h5py

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
failed = []


def check(ok, line):
    print(("ok   " if ok else "FAIL ") + line)
    if not ok:
        failed.append(line)


def sh(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} ...: exit {r.returncode}\n{r.stdout[-2000:]}")
    return r.stdout


def steady_windows(h5):
    """Per (file name, pid): (rank, steady window start and end on its own clock, steps), from a scan's HDF5."""
    with h5py.File(h5, "r") as f:
        r, it = f["/ranks"], f["/iterations"]
        starts = {}
        for rank, number, start, warm in zip(it["rank"][()], it["number"][()], it["start_ns"][()], it["warmup"][()]):
            if not warm:
                starts[int(rank)] = min(starts.get(int(rank), start), start)
        out = {}
        for rank, pid, file, scope_ms, steady in zip(r["rank"][()], r["pid"][()], r["file"][()], r["scope_ms"][()], r["steady"][()]):
            assert steady, "an unsteady rank"
            lo = int(starts[int(rank)])
            out[(os.path.basename(file.decode()), int(pid))] = (int(rank), lo, lo + scope_ms * 1e6)
        ks = f["/kernels/steady"]
        steps = {int(rk): int(s) for rk, s in zip(ks["rank"][()], ks["steps"][()])}
    return {key: (rank, lo, hi, steps[rank]) for key, (rank, lo, hi) in out.items()}


def raw_kernels(sqlite_files, windows):
    """Per kernel short name: (mean over ranks of count per step, of ms per step), from the raw tables."""
    per = {}
    ranks = len(windows)
    for path in sqlite_files:
        c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = c.execute("SELECT k.globalPid, s.value, k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                         "JOIN StringIds s ON s.id = k.shortName")
        for gpid, name, start, end in rows:
            rank, lo, hi, steps = windows[(os.path.basename(path), (gpid >> 24) & 0xFFFFFF)]
            if lo <= start < hi:
                cnt, ms = per.get(name, (0.0, 0.0))
                per[name] = (cnt + 1.0 / steps / ranks, ms + (end - start) / 1e6 / steps / ranks)
        c.close()
    return per


def compare(args, good, bad, name):
    out = os.path.join(args.workdir, name)
    sh([args.scan_bin, "compare", good, bad, "-o", out + ".h5", "--summary", out + ".json", "-q"])
    with open(out + ".json") as f:
        return json.load(f), out + ".h5"


def kernel_rows(h5):
    with h5py.File(h5, "r") as f:
        g = f["/compare/kernels"]
        cols = {k: g[k][()] for k in g.keys()}
    return [{k: (v[i].decode() if isinstance(v[i], bytes) else v[i]) for k, v in cols.items()} for i in range(len(cols["name"]))]


def generated(args):
    w = args.workdir
    base = ["--layout", "2x2x4", "--hosts", "4", "--noise", "0.05:3:0.02:0.02"]
    for name, extra in (("healthy", ["--seed", "31"]), ("slow", ["--seed", "31", "--fault", "slow_kernel:gemm_dgrad:1.5"]),
                        ("other", ["--seed", "32"])):
        sh([args.sim_bin, os.path.join(w, name)] + base + extra)
        sh([args.scan_bin, os.path.join(w, name), "-q", "-o", os.path.join(w, name + ".h5")])
    s, _ = compare(args, os.path.join(w, "healthy.h5"), os.path.join(w, "slow.h5"), "cmp_slow")
    ks = s["compare"]["kernels"]
    windows = steady_windows(os.path.join(w, "healthy.h5"))
    raw = raw_kernels(glob.glob(os.path.join(w, "healthy", "*.sqlite")), windows)
    dgrad = [n for n in raw if "_nn_n_" in n and n.startswith("sm90_xmma_gemm")]  # the dgrad GEMM's name (src/sim)
    check(len(dgrad) == 1, f"generated: the dgrad GEMM is one name in the raw tables ({dgrad})")
    if ks and dgrad:
        planted = 0.5 * raw[dgrad[0]][1]
        check(ks[0]["name"] == dgrad[0], f"generated: the first change is the slowed kernel ({ks[0]['name'][:50]})")
        check(abs(ks[0]["delta_ms"] / planted - 1) <= 0.05,
              f"generated: its delta {ks[0]['delta_ms']:.3f} ms per rank per step, planted {planted:.3f} ms")
        check(ks[0]["change"] == "slower", f"generated: called {ks[0]['change']}")
    else:
        check(False, "generated: no significant kernel change")
    s2, _ = compare(args, os.path.join(w, "healthy.h5"), os.path.join(w, "other"), "cmp_noise")
    check(not s2["compare"]["kernels"], f"generated: healthy vs another noise seed: no change above the noise "
                                        f"({[k['name'][:30] for k in s2['compare']['kernels']]})")


def slow_gpu(args):
    """Issue 37: one GPU 1.3x slower (rank 5 of 16). Its GEMMs are the first changes, on rank 5;
    no NCCL kernel ranks above them (its peers' all-reduce grew only by waiting), and the waiting
    is listed apart, for rank 5."""
    w = args.workdir
    base = ["--layout", "2x2x4", "--hosts", "4", "--seed", "31", "--noise", "0.05:3:0.02:0.02"]
    sh([args.sim_bin, os.path.join(w, "slowgpu")] + base + ["--fault", "slow_gpu:5:1:1.3"])
    sh([args.scan_bin, os.path.join(w, "slowgpu"), "-q", "-o", os.path.join(w, "slowgpu.h5")])
    s, out = compare(args, os.path.join(w, "healthy.h5"), os.path.join(w, "slowgpu.h5"), "cmp_slowgpu")
    ks = s["compare"]["kernels"]
    gemms = [i for i, k in enumerate(ks) if not k["nccl"] and "gemm" in k["name"]]
    nccl = [i for i, k in enumerate(ks) if k["nccl"]]
    check(bool(gemms), f"slow GPU: the slowed GEMMs are significant changes ({[k['name'][:30] for k in ks]})")
    check(not nccl or (gemms and max(gemms) < min(nccl)),
          f"slow GPU: every slowed GEMM ranks above any NCCL kernel (GEMMs at {gemms}, NCCL at {nccl})")
    check(bool(ks) and ks[0]["own_rank"] == 5 and ks[0]["own_delta_ms"] > 0,
          f"slow GPU: the first change is on rank 5 ({ks[0]['own_rank'] if ks else None})")
    waits = s["compare"]["waiting"]
    check(bool(waits) and waits[0]["waiting_for"] == 5 and waits[0]["bad_wait_ms"] > waits[0]["good_wait_ms"],
          f"slow GPU: the NCCL waiting is listed apart, for rank 5 ({waits[:1]})")


def real(args):
    d = os.path.join(args.shared, "data", "real")
    files = [os.path.join(d, f"nsysai_mfu_2gpu_{x}.sqlite") for x in ("before", "after")]
    if not all(os.path.exists(f) for f in files):
        print(f"skip: real captures: {d} has no nsysai_mfu_2gpu_before/after.sqlite")
        return False
    h5s = []
    for f, side in zip(files, ("before", "after")):
        h5 = os.path.join(args.workdir, side + ".h5")
        sh([args.scan_bin, f, "-q", "-o", h5, "--summary", h5 + ".json"])
        h5s.append(h5)
    s, out = compare(args, h5s[0], h5s[1], "cmp_real")
    for h5, side, key in zip(h5s, ("before", "after"), ("good", "bad")):
        with open(h5 + ".json") as f:
            want = json.load(f)["what_if"]["step_ms_actual"]
        check(abs(s["compare"]["step_ms"][key] - want) <= 1e-6 * want, f"real: {side} step {s['compare']['step_ms'][key]:.4f} ms "
                                                                        f"= its scan's {want:.4f} ms")
    rows = kernel_rows(out)
    for f, h5, side in zip(files, h5s, ("good", "bad")):
        raw = raw_kernels([f], steady_windows(h5))
        worst = 0.0
        for r in rows:
            cnt, ms = raw.get(r["name"], (0.0, 0.0))
            worst = max(worst, abs(r[side + "_count"] - cnt), abs(r[side + "_ms"] - ms))
        check(worst <= 1e-6 and len(raw) == sum(1 for r in rows if r[side + "_count"] > 0),
              f"real: {side}: {len(raw)} kernel names, count and ms per rank per step as the raw table gives (max diff {worst:.2e})")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scan-bin", required=True)
    ap.add_argument("--sim-bin", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    tmp = None
    if not args.workdir:
        tmp = tempfile.TemporaryDirectory(prefix="compare-check-")
        args.workdir = tmp.name
    os.makedirs(args.workdir, exist_ok=True)
    generated(args)
    slow_gpu(args)
    had_real = real(args)
    print("all checks passed" if not failed else f"{len(failed)} failed")
    if failed:
        return 1
    return 0 if had_real else 77


if __name__ == "__main__":
    sys.exit(main())
