#!/usr/bin/python3
"""The real 8-rank DLRM Kineto traces (../shared/data/real/param/dlrm_kineto) through straggler-scan,
checked against what this script computes from the raw events alone (json, no straggler-scan code):

* every NCCL kernel of every rank is in one matched collective of all 8 ranks: the k-th NCCL kernel
  of each rank (NCCL runs one communicator's collectives in issue order on its stream; all of this
  job's are on one stream per rank) is the k-th op of the one communicator, with end skew <= 10 us;
* the last arriver of each collective (latest kernel start), and each rank's wait total (sum over
  collectives of the last arrival minus its own), as in docs/hdf5-layout.md /ranks wait_ms;
* the HTA-comparable breakdown per rank (/ranks hta_*), from HTA's definitions as documented in
  docs/hta.md, when the build has those columns.

The ranks of this job ran on one host and so share one clock; straggler-scan cannot know that (Kineto
writes no host name) and aligns clocks from the collectives, by offsets of a few microseconds. The
comparisons allow what the reported offsets can move: the last arriver is checked where the top two
arrivals differ by more than twice the largest offset, the waits to 2 x offset x collectives.

Usage: check_dlrm.py SCAN_BINARY TARBALL WORKDIR   (exit 77: input absent, the test is skipped)
"""
import json
import math
import os
import re
import subprocess
import sys
import tarfile


def raw_ranks(folder):
    """Per rank: NCCL kernels (start, end) in start order, from the raw trace events (times in ns)."""
    out = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name)) as f:
            d = json.load(f)
        rank = d["distributedInfo"]["rank"]
        ks = [e for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
        nccl = sorted((int(round(e["ts"] * 1000)), int(round((e["ts"] + e["dur"]) * 1000)), e["args"]["stream"])
                      for e in ks if re.match(r"^nccl", e["name"]))
        out[rank] = {"nccl": nccl, "events": d["traceEvents"]}
    return out


# HTA's kernel classes (hta/common/types.py at f4d0062: CommunicateKernelGroupingPattern,
# MemoryKernelGroupingPattern, ComputeKernelGroupingPattern with inverse_match; GroupingPattern.match is
# re.match, anchored at the start).
HTA_COMM = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
HTA_MEMORY = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")
HTA_NOT_COMPUTE = re.compile(r"(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)|"
                             r"(^runFunction)|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)|"
                             r"(^collective_subgraph_execution)")


def hta_kind(name):
    if HTA_COMM.match(name):
        return "comm"
    if HTA_MEMORY.match(name):
        return "memory"
    return "other" if HTA_NOT_COMPUTE.match(name) else "compute"


def merged(intervals):
    """hta/utils/utils.py merge_kernel_intervals: sorted by start; a new group only where a start is
    strictly after every earlier end (touching intervals merge)."""
    out = []
    for ts, end in sorted(intervals):
        if out and ts <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([ts, end])
    return out


def hta_breakdown(events):
    """HTA's temporal breakdown (hta/analyzers/breakdown_analysis.py get_temporal_breakdown) and
    communication-computation overlap (communication_analysis.py get_comm_comp_overlap) of one rank,
    written from HTA's source: GPU events are those with a stream (args.stream); with more than one
    ProfilerStep only those launched (by correlation) before the last step starts
    (trace.py _filter_irrelevant_gpu_kernels); float timestamps rounded start up, end down to whole
    microseconds (trace_parser.py round_down_time_stamps; this trace has integers)."""
    steps = [e for e in events if e.get("ph") == "X" and re.match(r"^ProfilerStep#(\d+)", str(e.get("name", "")))]
    gpu = [e for e in events if e.get("ph") == "X" and isinstance(e.get("args"), dict) and "stream" in e["args"]
           and e["args"]["stream"] != -1]
    if len(steps) > 1:
        last = max(s["ts"] for s in steps)
        launched = {e["args"].get("correlation") for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                    and e["ts"] < last}
        gpu = [e for e in gpu if e["args"].get("correlation") in launched]
    iv = {"all": [], "compute": [], "comm": []}
    for e in gpu:
        ts, end = math.ceil(e["ts"]), math.floor(e["ts"] + e["dur"])
        iv["all"].append((ts, end))
        k = hta_kind(e["name"])
        if k in iv:
            iv[k].append((ts, end))
    m = {k: merged(v) for k, v in iv.items()}
    span = m["all"][-1][1] - m["all"][0][0]
    busy = sum(b - a for a, b in m["all"])
    compute = sum(b - a for a, b in m["compute"])
    idle = span - busy
    non_compute = span - compute - idle
    overlap, i, j = 0, 0, 0
    comp, comm = m["compute"], m["comm"]
    while i < len(comp) and j < len(comm):
        overlap += max(0, min(comp[i][1], comm[j][1]) - max(comp[i][0], comm[j][0]))
        if comp[i][1] < comm[j][1]:
            i += 1
        else:
            j += 1
    comm_time = sum(b - a for a, b in comm)
    return {"hta_idle_pct": round(100 * idle / span, 2), "hta_compute_pct": round(100 * compute / span, 2),
            "hta_non_compute_pct": round(100 * non_compute / span, 2),
            "hta_comm_overlap_pct": round(100 * overlap / comm_time, 2) if comm_time else float("nan")}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    scan, tarball, work = sys.argv[1:4]
    if not os.path.exists(tarball):
        print(f"SKIP: {tarball} is absent (the real captures of ../shared/data/real are not on this machine)")
        sys.exit(77)
    os.makedirs(work, exist_ok=True)
    with tarfile.open(tarball) as t:
        t.extractall(work, filter="data") if hasattr(tarfile, "data_filter") else t.extractall(work)
    folder = os.path.join(work, "dlrm_kineto")
    h5 = os.path.join(work, "out.h5")
    summary = os.path.join(work, "summary.json")
    r = subprocess.run([scan, folder, "-o", h5, "--summary", summary], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"straggler-scan exited {r.returncode}: {r.stderr}")
    import h5py
    raw = raw_ranks(folder)
    ranks = sorted(raw)
    if ranks != list(range(8)):
        fail(f"ranks in distributedInfo: {ranks}")
    n_ops = len(raw[0]["nccl"])
    if any(len(raw[r]["nccl"]) != n_ops for r in ranks) or n_ops == 0:
        fail("ranks differ in their number of NCCL kernels")
    if any(len({k[2] for k in raw[r]["nccl"]}) != 1 for r in ranks):
        fail("NCCL kernels on more than one stream (the matching below assumes one)")
    with h5py.File(h5) as f:
        comms = f["/collectives/communicators"]
        if len(comms["size"]) != 1 or comms["size"][0] != 8 or comms["matched_ops"][0] != n_ops:
            fail(f"expected one communicator of 8 ranks with {n_ops} matched ops, got sizes "
                 f"{list(comms['size'][:])} matched {list(comms['matched_ops'][:])}")
        members = list(f["/collectives/members"][:])
        arrival = f["/collectives/arrival_ns"][:].reshape(n_ops, 8)
        last_rank = list(f["/collectives/ops/last_rank"][:])
        clock_rank = list(f["/clock/rank"][:])
        offset_ns = {int(r): abs(float(o)) * 1e6 for r, o in zip(clock_rank, f["/clock/offset_ms"][:])}
        rk = f["/ranks"]
        wait_ms = {int(r): float(w) for r, w in zip(rk["rank"][:], rk["wait_ms"][:])}
        hta = {c: {int(r): float(v) for r, v in zip(rk["rank"][:], rk[c][:])}
               for c in ("hta_idle_pct", "hta_compute_pct", "hta_non_compute_pct", "hta_comm_overlap_pct") if c in rk}
    slack = 2 * max(offset_ns.values()) + 1
    if max(offset_ns.values()) > 5000:
        fail(f"clock offsets of up to {max(offset_ns.values())} ns between ranks of one host")
    utc = {}  # the wall clock of each rank's times: Unix-epoch microseconds in this trace
    for k in range(n_ops):
        starts = {r: raw[r]["nccl"][k][0] for r in ranks}
        ends = {r: raw[r]["nccl"][k][1] for r in ranks}
        skew = max(ends.values()) - min(ends.values())
        if skew > 10_000:
            fail(f"collective {k}: end skew {skew} ns > 10 us: not one collective")
        for m, r in enumerate(members):  # the tool's k-th op of member r is the raw k-th kernel of r
            if abs(arrival[k][m] - starts[r]) > slack:
                fail(f"collective {k}, rank {r}: arrival {arrival[k][m]} vs the kernel's start {starts[r]}")
        order = sorted(ranks, key=lambda r: starts[r], reverse=True)
        if starts[order[0]] - starts[order[1]] > slack and last_rank[k] != order[0]:
            fail(f"collective {k}: last arriver {last_rank[k]}, the raw events say {order[0]}")
    for r in ranks:
        want = sum(max(raw[q]["nccl"][k][0] for q in ranks) - raw[r]["nccl"][k][0] for k in range(n_ops)) / 1e6
        if abs(wait_ms[r] - want) > slack * n_ops / 1e6 + 1e-3:
            fail(f"rank {r}: wait {wait_ms[r]} ms, the raw events give {want} ms")
    if len(hta) != 4:
        fail("/ranks lacks the HTA-comparable columns hta_idle_pct, hta_compute_pct, hta_non_compute_pct, hta_comm_overlap_pct")
    for r in ranks:
        want = hta_breakdown(raw[r]["events"])
        for c, v in want.items():
            if not abs(hta[c][r] - v) <= 0.006:  # HTA rounds to 2 decimals
                fail(f"rank {r}: {c} {hta[c][r]}, HTA's definition on the raw events gives {v}")
    print(f"OK: {n_ops} collectives of 8 ranks matched, end skew <= 10 us, last arrivers, waits and the HTA breakdown as the raw events say "
          f"(clock slack {slack:.0f} ns)")


if __name__ == "__main__":
    main()
