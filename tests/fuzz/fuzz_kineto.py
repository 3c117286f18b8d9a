#!/usr/bin/python3
"""Mutation fuzzer for the PyTorch profiler (Kineto) trace reader of straggler-scan (.json, .json.gz).

Each case is a 2-rank directory: one rank (the victim) is a mutated trace, the other a healthy one.
Seeds: a small synthetic 2-rank trace pair written here (kernels, NCCL all-reduce kernels ending
together on both ranks, cudaLaunchKernel calls with correlation ids, ProfilerStep#N ranges,
metadata, baseTimeNanoseconds) and ranks 0 and 1 of the real DLRM traces
(../shared/data/real/param/dlrm_kineto/dlrm_kineto.tar.gz; skipped when absent). straggler-scan must
keep the promises oracle.py checks for every case (no sanitizer report, no signal, no hang, exit 0
or 2 (1 only "cannot write"), at most one stderr line per file naming it, no partial output,
inputs unchanged) and those of the case's family (expect_kineto below, tests/fuzz/README.md
"Kineto traces"). Case i of --seed S is always the same bytes. Failures are saved (the case's files
gzipped and case.json) under WORKDIR/findings/<signature>/; copy one into tests/fuzz/corpus/kineto/
to replay it on every run.

  fuzz_kineto.py --scan BIN [--workdir DIR] [--cases N | --minutes M] [--seed S] [--first I]
                 [--case I] [--families F,F] [--real DIR] [--corpus DIR] [--timeout S]
  fuzz_kineto.py --scan BIN --big [--big-mb 1024] [--big-mem-mb 1536]
Exit status: 0 when no new finding (findings matching an open corpus case are listed, not counted).
"""
import argparse
import collections
import copy
import gzip
import json
import os
import random
import re
import resource
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402
from fuzz_nsys import replay_corpus as nsys_replay_corpus, save_case, slug  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
KB, MB = 1 << 10, 1 << 20
DLRM_TAR = os.path.join("param", "dlrm_kineto", "dlrm_kineto.tar.gz")
BASE_NS = 1711964646000000000
NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


class Raw(bytes):
    """JSON text written as it is: invalid tokens, numbers beyond a double, bytes that are no UTF-8."""


class Pairs(list):
    """An object as (key, value) pairs, for duplicated keys (a key may be Raw)."""


def enc_key(k):
    return bytes(k) if isinstance(k, Raw) else json.dumps(k).encode()


def enc(v, compact=False):
    sep, colon = (b",", b":") if compact else (b", ", b": ")
    if isinstance(v, Raw):
        return bytes(v)
    if isinstance(v, (dict, Pairs)):
        items = v.items() if isinstance(v, dict) else v
        return b"{" + sep.join(enc_key(k) + colon + enc(x, compact) for k, x in items) + b"}"
    if isinstance(v, list):
        return b"[" + sep.join(enc(x, compact) for x in v) + b"]"
    return json.dumps(v).encode()


def plain(v):
    """Whether json.dumps can write v (no Raw, no Pairs): the fast path."""
    if isinstance(v, (Raw, Pairs)):
        return False
    if isinstance(v, dict):
        return all(plain(x) for x in v.values())
    if isinstance(v, list):
        return all(plain(x) for x in v)
    return True


class Doc:
    """A trace as its top-level members, in order; the traceEvents list holds the seed's event
    objects until one is changed (copied first: the seeds stay as they are)."""

    def __init__(self, members, cache):
        self.members = [[k, (list(v) if k == "traceEvents" and isinstance(v, list) else v)] for k, v in members]
        self.cache = cache  # id(seed event) -> its pretty text

    def get(self, key):
        for k, v in self.members:
            if k == key:
                return v
        return None

    def set(self, key, value):
        for m in self.members:
            if m[0] == key:
                m[1] = value
                return
        self.members.insert(max(0, len(self.members) - 1), [key, value])

    def drop(self, key):
        self.members = [m for m in self.members if m[0] != key]

    @property
    def events(self):
        v = self.get("traceEvents")
        return v if isinstance(v, list) else []

    def own(self, i):
        """Event i, copied once so that it can be changed."""
        ev = self.events
        if id(ev[i]) in self.cache:
            ev[i] = copy.deepcopy(ev[i])
        return ev[i]

    def event_bytes(self, e, compact):
        if not compact and id(e) in self.cache:
            return self.cache[id(e)]
        return json.dumps(e, separators=(",", ":") if compact else (", ", ": ")).encode() if plain(e) else enc(e, compact)

    def serialize(self, style="pretty"):
        compact = style == "minified"
        parts = []
        for k, v in self.members:
            if k == "traceEvents" and isinstance(v, list):
                if compact:
                    parts.append(enc_key(k) + b":[" + b",".join(self.event_bytes(e, True) for e in v) + b"]")
                else:
                    body = b",\n".join(b"  " + self.event_bytes(e, False) for e in v)
                    parts.append(b'  "traceEvents": [\n' + body + (b"\n  ]" if v else b"]"))
            else:
                text = json.dumps(v, separators=(",", ":") if compact else (", ", ": ")).encode() if plain(v) else enc(v, compact)
                parts.append((b"" if compact else b"  ") + enc_key(k) + (b":" if compact else b": ") + text)
        return b"{" + b",".join(parts) + b"}" if compact else b"{\n" + b",\n".join(parts) + b"\n}\n"


# ---------------------------------------------------------------------------------------------
# Seeds


def synth_trace(rank):
    """A small trace of rank 0 or 1 of a 2-rank job: 6 steps of 3 compute kernels and one NCCL
    all-reduce (both ranks' all-reduce kernels end together; rank 1 arrives late in step 3)."""
    pid, dev = 4100 + rank, rank
    t0, step = 5_000_000.0, 10_000.0
    ev = [{"name": "process_name", "ph": "M", "ts": t0, "pid": pid, "tid": 0, "args": {"name": "python3"}},
          {"name": "process_labels", "ph": "M", "ts": t0, "pid": pid, "tid": 0, "args": {"labels": "CPU"}},
          {"name": "thread_name", "ph": "M", "ts": t0, "pid": pid, "tid": pid, "args": {"name": "thread %d (python3)" % pid}},
          {"name": "process_name", "ph": "M", "ts": t0, "pid": dev, "tid": 0, "args": {"name": "python3"}},
          {"name": "process_labels", "ph": "M", "ts": t0, "pid": dev, "tid": 0, "args": {"labels": "GPU %d" % dev}},
          {"name": "thread_name", "ph": "M", "ts": t0, "pid": dev, "tid": 7, "args": {"name": "stream 7"}},
          {"name": "thread_name", "ph": "M", "ts": t0, "pid": dev, "tid": 20, "args": {"name": "stream 20"}}]
    kernels = [("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_"
                "execute_segment_k_off_kernel__5x_cublas", 820.5),
               ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", 12.25),
               ("void at::native::(anonymous namespace)::layer_norm_kernel<float>(long, float, float const*, "
                "float const*, float const*, float*, float*, float*)", 95.0)]
    corr, ext = 100, 500
    for it in range(6):
        t = t0 + it * step
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % (10 + it), "pid": pid, "tid": pid,
                   "ts": t, "dur": step - 40.0, "args": {"External id": ext, "Record function id": 0, "Ev Idx": ext}})
        ext += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": pid, "tid": pid, "ts": t + 20.0,
                   "dur": 9.5, "args": {"External id": ext, "cbid": 41, "correlation": corr}})
        ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": dev, "tid": 7,
                   "ts": t + 31.0, "dur": 4.5, "args": {"External id": ext, "device": dev, "context": 1, "stream": 7,
                                                         "correlation": corr, "bytes": 65536, "memory bandwidth (GB/s)": 14.5}})
        corr += 1
        ev.append({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": dev, "tid": 7, "ts": t + 40.0,
                   "dur": 1.5, "args": {"External id": ext, "device": dev, "context": 1, "stream": 7, "correlation": corr, "bytes": 4096}})
        corr += 1
        kt = t + 60.0
        for j, (name, dur) in enumerate(kernels):
            lt = t + 50.0 + j * 15.0
            ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": pid, "tid": pid, "ts": lt - 3.0, "dur": 12.0,
                       "args": {"External id": ext, "Record function id": 0, "Ev Idx": ext, "Sequence number": 77, "Fwd thread id": 1}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": pid, "ts": lt, "dur": 6.5,
                       "args": {"External id": ext, "cbid": 211, "correlation": corr}})
            kt = max(kt, lt + 8.0) + (rank * 3.0)
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": dev, "tid": 7, "ts": round(kt, 3), "dur": dur,
                       "args": {"External id": ext, "queued": 0, "device": dev, "context": 1, "stream": 7, "correlation": corr,
                                "registers per thread": 168, "shared memory": 98304, "blocks per SM": 1.2,
                                "warps per SM": 4.8, "grid": [132, 1, 1], "block": [384, 1, 1],
                                "est. achieved occupancy %": 6}})
            ev.append({"ph": "s", "id": corr, "pid": pid, "tid": pid, "ts": lt, "cat": "ac2g", "name": "ac2g"})
            ev.append({"ph": "f", "id": corr, "pid": dev, "tid": 7, "ts": round(kt, 3), "cat": "ac2g", "name": "ac2g", "bp": "e"})
            kt += dur
            corr += 1
            ext += 1
        late = (400.0 if it == 3 else 20.0) * rank
        arrive = t + 1200.0 + late
        end = t + 1200.0 + 400.0 + 650.0  # the same on both ranks
        lt = arrive - 25.0
        ev.append({"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": pid, "tid": pid, "ts": lt - 5.0,
                   "dur": 30.0, "args": {"External id": ext, "Input Dims": [[262144]], "Input type": ["float"], "Ev Idx": ext}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": pid, "ts": lt, "dur": 11.0,
                   "args": {"External id": ext, "cbid": 211, "correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": NCCL_KERNEL, "pid": dev, "tid": 20, "ts": arrive, "dur": round(end - arrive, 3),
                   "args": {"External id": ext, "queued": 0, "device": dev, "context": 1, "stream": 20, "correlation": corr,
                            "registers per thread": 96, "shared memory": 0, "grid": [2, 1, 1], "block": [640, 1, 1],
                            "Collective name": "allreduce", "In msg nelems": 262144, "Out msg nelems": 262144,
                            "Group size": 2, "dtype": "Float", "In split size": "[]", "Out split size": "[]",
                            "Process Group Name": "0", "Process Group Description": "default_pg",
                            "Process Group Ranks": "[0, 1]"}})
        corr += 1
        ext += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": pid, "tid": pid,
                   "ts": end + 5.0, "dur": 30.0, "args": {"External id": ext, "cbid": 131, "correlation": corr}})
        corr += 1
    ev.append({"ph": "X", "cat": "Trace", "ts": t0 - 100.0, "dur": 6 * step + 200.0, "pid": "Spans", "tid": "PyTorch Profiler",
               "name": "PyTorch Profiler (0)", "args": {"Op count": 0}})
    ev.append({"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
               "tid": "Trace PyTorch Profiler", "ts": t0 - 100.0})
    ev.append({"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": t0 + 6 * step + 150.0})
    dev_props = [{"id": i, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045379072, "computeMajor": 9, "computeMinor": 0,
                  "maxThreadsPerBlock": 1024, "numSms": 132} for i in range(2)]
    return [("schemaVersion", 1), ("deviceProperties", dev_props),
            ("distributedInfo", {"backend": "nccl", "rank": rank, "world_size": 2, "pg_count": 1,
                                 "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                                                "pg_size": 2, "ranks": "[0, 1]"}], "nccl_version": "2.20.5"}),
            ("record_shapes", 1), ("with_stack", 0), ("traceEvents", ev), ("traceName", "rank_%d.json" % rank),
            ("displayTimeUnit", "ms"), ("baseTimeNanoseconds", BASE_NS)]


class Seed:
    """Two ranks' traces: name, file names, raw bytes, members (parsed)."""

    def __init__(self, name, files):
        self.name = name
        self.files = files  # rank -> (file name, raw bytes, members)
        self.cache = {}
        for _, _, members in files.values():
            for k, v in members:
                if k == "traceEvents":
                    for e in v:
                        self.cache[id(e)] = json.dumps(e).encode()

    def doc(self, rank):
        return Doc(self.files[rank][2], self.cache)


def make_seeds(args):
    seeds = {}
    files = {}
    for r in (0, 1):
        members = synth_trace(r)
        files[r] = ("rank_%d.json" % r, None, members)
    seeds["synth"] = Seed("synth", files)
    for r in (0, 1):  # its bytes as the writer here writes them
        seeds["synth"].files[r] = (files[r][0], seeds["synth"].doc(r).serialize(), files[r][2])
    tar = os.path.join(args.real, DLRM_TAR) if args.real else None
    if tar and os.path.isfile(tar):
        found = {}
        with tarfile.open(tar) as t:
            for m in t.getmembers():
                base = os.path.basename(m.name)
                if not (m.isfile() and re.match(r"worker\d+_step_.*\.json$", base)):
                    continue
                raw = t.extractfile(m).read()
                d = json.loads(raw)
                r = (d.get("distributedInfo") or {}).get("rank")
                if r in (0, 1) and r not in found:
                    found[r] = (base, raw, list(d.items()))
        if len(found) == 2:
            seeds["dlrm"] = Seed("dlrm", found)
            print(f"seeds: synth, dlrm ({found[0][0]}, {found[1][0]})", flush=True)
        else:
            print(f"seeds: synth; DLRM seed skipped: ranks 0 and 1 not both in {tar}", flush=True)
    else:
        print(f"seeds: synth; DLRM seed skipped: {tar or '(no --real)'} is absent", flush=True)
    return seeds


# ---------------------------------------------------------------------------------------------
# Mutations: helpers

def cat_of(e):
    return str(e.get("cat", "")).lower() if isinstance(e, dict) else ""


def name_of(e):
    n = e.get("name", "") if isinstance(e, dict) else ""
    return n if isinstance(n, str) else ""


CATEGORIES = {
    "kernel": lambda e: cat_of(e) == "kernel",
    "nccl": lambda e: cat_of(e) == "kernel" and "nccl" in name_of(e).lower(),
    "launch": lambda e: cat_of(e) == "cuda_runtime" and "Launch" in name_of(e),
    "runtime": lambda e: cat_of(e) == "cuda_runtime",
    "step": lambda e: cat_of(e) == "user_annotation" and name_of(e).startswith("ProfilerStep"),
    "annotation": lambda e: cat_of(e) == "user_annotation",
    "copy": lambda e: cat_of(e) in ("gpu_memcpy", "gpu_memset"),
    "meta": lambda e: isinstance(e, dict) and e.get("ph") == "M",
    "any": lambda e: isinstance(e, dict),
}


def pick(rng, doc, category, how=None):
    """Indices of events of a category: one, some, all, the first or the last."""
    ev = doc.events
    idx = [i for i, e in enumerate(ev) if CATEGORIES[category](e)] or [i for i, e in enumerate(ev) if isinstance(e, dict)]
    if not idx:
        return [], "none"
    how = how or rng.choices(["one", "some", "all", "first", "last"], [5, 3, 2, 1, 1])[0]
    if how == "one":
        return [rng.choice(idx)], how
    if how == "first":
        return idx[:1], how
    if how == "last":
        return idx[-1:], how
    if how == "some":
        return sorted(rng.sample(idx, max(1, len(idx) // 4))), how
    return idx, how


def set_path(e, path, value):
    """Sets "ts" or "args.X" in an event (a non-object args becomes one)."""
    if path.startswith("args."):
        if not isinstance(e.get("args"), dict):
            e["args"] = {}
        e["args"][path[5:]] = value
    else:
        e[path] = value


def del_path(e, path):
    if path.startswith("args."):
        if isinstance(e.get("args"), dict):
            e["args"].pop(path[5:], None)
    else:
        e.pop(path, None)


def other_type(rng):
    """A JSON value of some type: what a field of another type is replaced by."""
    t = rng.choice(["string", "int", "float", "huge", "array", "object", "null", "bool", "bad_token"])
    v = {"string": lambda: rng.choice(["", "12", "1694128201436271", "abc", "X", "kernel", "-1", "1e3", " 5"]),
         "int": lambda: rng.choice([0, 1, -1, 7, 42, 2 ** 31, -2 ** 31, 2 ** 32, 123456789]),
         "float": lambda: rng.choice([1.5, -0.0, 0.5, 1e-7, 3.25, 1694128201436271.5, -2.75]),
         "huge": lambda: Raw(rng.choice([b"9223372036854775808", b"-9223372036854775808", b"9223372036854775807",
                                          b"-9223372036854775809", b"18446744073709551616", b"1e308", b"-1e308",
                                          b"1e400", b"123456789012345678901234567890", b"4.9e-324", b"1e-400"])),
         "array": lambda: rng.choice([[], [1, 2], [[1]], ["a"], [None]]),
         "object": lambda: rng.choice([{}, {"a": 1}, {"ts": 5}]),
         "null": lambda: None,
         "bool": lambda: rng.choice([True, False]),
         "bad_token": lambda: Raw(rng.choice([b"NaN", b"Infinity", b"-Infinity", b"-", b"1e", b"0x10", b"01", b".5",
                                               b"+1", b"1.2.3", b"tru", b"nul", b"'x'"]))}[t]()
    return t, v


def shown(v):
    s = bytes(v).decode("latin-1") if isinstance(v, Raw) else json.dumps(v)
    return s if len(s) <= 60 else s[:40] + f"...({len(s)} chars)"


def big_string(rng, size):
    kind = rng.choice(["a", "name", "digits", "mixed"])
    unit = {"a": "a", "name": "ncclDevKernel_AllReduce_", "digits": "0123456789", "mixed": "x{}[],:\\\" \t"}[kind]
    s = (unit * (size // len(unit) + 1))[:size]
    if kind == "mixed":  # valid JSON inside a string: escapes written as escapes
        return Raw(json.dumps(s).encode())
    return s


def event_region(data):
    """Byte range of the traceEvents array (the whole file when not found)."""
    i = data.find(b'"traceEvents"')
    if i < 0:
        return 0, len(data)
    j = data.rfind(b"]")
    return i, j if j > i else len(data)


def gz(data, level=6, mtime=0):
    return gzip.compress(data, compresslevel=level, mtime=mtime)


# ---------------------------------------------------------------------------------------------
# Families. Each takes (rng, case) and changes case.doc (the victim's parsed trace), or sets
# case.data (bytes) or case.post (byte changes after writing), and says what it expects.


class Case:
    def __init__(self, seed, victim, rng):
        self.seed, self.victim, self.rng = seed, victim, rng
        self.doc = seed.doc(victim)
        self.doc_changed = False
        self.style = "pretty"
        self.data = None  # final plain bytes, when set by a family
        self.post = []  # functions bytes -> bytes on the plain text
        self.container = "json"  # or "gz"
        self.gz_post = []  # functions bytes -> bytes on the compressed file
        self.name = None  # victim file name (default: the seed's, + .gz)
        self.ops = []
        self.fate = "any"  # the victim: "analysed", "refused" or "any"
        self.phrase = None  # regex its refusal must match
        self.warn = None  # regex one warning naming it must match
        self.collide = None  # "must" / "may": both files claim one rank
        self.rc = [0]
        self.line = None
        self.mem_bound = None  # MiB of peak RSS (release builds)

    def op(self, s):
        self.ops.append(s)

    def plain_bytes(self):
        if self.data is not None:
            data = self.data
        elif not self.doc_changed and self.style == "pretty":
            data = self.seed.files[self.victim][1]
        else:
            data = self.doc.serialize(self.style)
        for f in self.post:
            data = f(data)
        return data


def fam_truncate(rng, c):
    data = c.seed.files[c.victim][1] if rng.random() < 0.8 else c.doc.serialize("minified")
    if data is not c.seed.files[c.victim][1]:
        c.style = "minified"
        c.op("minified")
    last = data.rstrip().rfind(b"}")  # cut strictly before the final brace
    lo, hi = event_region(data)
    where = rng.choices(["string", "number", "between", "header", "tail", "last_byte", "random", "empty", "few"],
                        [5, 4, 4, 2, 2, 2, 3, 1, 1])[0]
    if where == "string":
        qs = [m.start() for m in re.finditer(rb'"', data[lo:hi])] or [0]
        q = lo + rng.choice(qs)
        cut = min(last, q + 1 + rng.randrange(0, 12))
    elif where == "number":
        ds = [m.start() for m in re.finditer(rb"[0-9]", data[lo:hi])] or [0]
        cut = min(last, lo + rng.choice(ds) + 1)
    elif where == "between":
        bs = [m.end() for m in re.finditer(rb"\},?", data[lo:hi])] or [0]
        cut = min(last, lo + rng.choice(bs))
    elif where == "header":
        cut = rng.randrange(1, max(2, lo + 15))
    elif where == "tail":
        cut = rng.randrange(min(hi, last), last) if last > hi else last
    elif where == "last_byte":
        cut = last
    elif where == "empty":
        cut = 0
    elif where == "few":
        cut = rng.randrange(1, 24)
    else:
        cut = rng.randrange(0, last)
    c.data = data[:cut]
    c.op(f"truncated {where} at byte {cut} of {len(data)}")
    if rng.random() < 0.3:
        c.container = "gz"
        c.op("gzip of the cut text")
    c.fate = "refused"


def fam_gz(rng, c):
    c.container = "gz"
    v = rng.choices(["cut", "flip", "truncated_json", "multi_member", "trailing_garbage", "double", "plain_named_gz",
                     "header_fields", "empty", "stored", "zlib_not_gzip", "whitespace_bomb"],
                    [6, 6, 2, 2, 2, 1, 1, 2, 1, 1, 1, 1])[0]
    c.op(v)
    if v == "cut":
        def cut(z, r=random.Random(rng.random())):
            where = r.choice(["header", "body", "trailer"])
            n = {"header": lambda: r.randrange(0, 10), "body": lambda: r.randrange(10, len(z) - 8),
                 "trailer": lambda: r.randrange(len(z) - 8, len(z))}[where]()
            return z[:n]
        c.gz_post.append(cut)
        c.fate = "refused"
    elif v == "flip":
        seedf = rng.random()

        def flip(z, seedf=seedf):
            r = random.Random(seedf)
            z = bytearray(z)
            for _ in range(r.randint(1, 4)):
                where = r.choice(["header", "body", "body", "trailer"])
                i = {"header": lambda: r.randrange(0, 10), "body": lambda: r.randrange(10, len(z) - 8),
                     "trailer": lambda: r.randrange(len(z) - 8, len(z))}[where]()
                z[i] ^= r.randrange(1, 256)
            return bytes(z)
        c.gz_post.append(flip)
    elif v == "truncated_json":
        data = c.seed.files[c.victim][1]
        c.data = data[:rng.randrange(1, len(data) - 2)]
        c.fate = "refused"
    elif v == "multi_member":
        k = rng.randint(2, 3)

        def members(_z, c=c, k=k, r=random.Random(rng.random())):
            data = c.plain_bytes()
            cuts = sorted(r.sample(range(1, len(data)), k - 1))
            return b"".join(gz(p) for p in (data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])))
        c.gz_post.append(members)
        c.fate = "analysed"
    elif v == "trailing_garbage":
        junk = rng.choice([b"\x00" * 16, b"garbage", bytes(rng.randrange(256) for _ in range(64)), b"\x1f\x8b", b"\x1f\x8b\x08\x00"])
        c.gz_post.append(lambda z, junk=junk: z + junk)
        c.op(f"+ {junk[:16]!r}")
    elif v == "double":
        c.gz_post.append(lambda z: gz(z))
        c.fate = "refused"
    elif v == "plain_named_gz":
        c.container = "json"
        c.name = c.seed.files[c.victim][0] + ".gz"
        c.fate = "analysed"
    elif v == "header_fields":
        flags = rng.choice([0x04, 0x08, 0x10, 0x02, 0x1e])

        def hdr(_z, c=c, flags=flags):
            data = c.plain_bytes()
            h = b"\x1f\x8b\x08" + bytes([flags]) + struct.pack("<I", 1700000000) + b"\x00\x03"
            if flags & 0x04:
                h += struct.pack("<H", 6) + b"AB\x02\x00xy"
            if flags & 0x08:
                h += b"trace.json\x00"
            if flags & 0x10:
                h += b"a comment\x00"
            if flags & 0x02:
                h += struct.pack("<H", zlib.crc32(h) & 0xFFFF)
            co = zlib.compressobj(6, zlib.DEFLATED, -15)
            return h + co.compress(data) + co.flush() + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
        c.gz_post.append(hdr)
        c.op(f"flags {flags:#x}")
        c.fate = "analysed"
    elif v == "empty":
        c.data = b""
        c.fate = "refused"
    elif v == "stored":
        c.gz_post.append(lambda _z, c=c: gz(c.plain_bytes(), level=0))
        c.fate = "analysed"
    elif v == "zlib_not_gzip":
        c.gz_post.append(lambda _z, c=c: zlib.compress(c.plain_bytes()))
        c.fate = "refused"
    elif v == "whitespace_bomb":
        n = rng.choice([50, 200, 300]) * MB
        where = rng.choice(["before traceEvents", "between events", "after ["])
        c.op(f"{n >> 20} MiB of blanks {where}")

        def bomb(_z, c=c, n=n, where=where):
            data = c.plain_bytes()
            lo, hi = event_region(data)
            i = {"before traceEvents": lo, "after [": data.find(b"[", lo) + 1,
                 "between events": data.find(b"},", lo) + 2}[where]
            co = zlib.compressobj(9, zlib.DEFLATED, 31)
            out = [co.compress(data[:i])]
            chunk = b" " * MB
            for _ in range(n // MB):
                out.append(co.compress(chunk))
            out.append(co.compress(data[i:]))
            out.append(co.flush())
            return b"".join(out)
        c.gz_post.append(bomb)
        c.fate = "analysed"
        c.mem_bound = 250  # MiB: blanks are no reason to hold the file


EVENT_FIELDS = {
    "ts": ["kernel", "nccl", "launch", "step", "any"], "dur": ["kernel", "nccl", "launch", "step", "any"],
    "ph": ["kernel", "nccl", "launch", "step", "any"], "cat": ["kernel", "nccl", "launch", "step", "any"],
    "name": ["kernel", "nccl", "launch", "step", "any"], "pid": ["kernel", "launch", "any"], "tid": ["kernel", "launch", "any"],
    "args": ["kernel", "nccl", "launch", "copy", "annotation"],
    "args.stream": ["kernel", "nccl", "copy"], "args.device": ["kernel", "nccl"], "args.correlation": ["kernel", "launch", "nccl"],
    "args.bytes": ["copy"], "args.In msg nelems": ["nccl"], "args.Out msg nelems": ["nccl"], "args.dtype": ["nccl"],
    "args.Process Group Ranks": ["nccl"], "args.Process Group Name": ["nccl"], "args.Collective name": ["nccl"],
    "args.Group size": ["nccl"], "args.Input Dims": ["annotation"], "args.Input type": ["annotation"],
}
HEADER_FIELDS = ["distributedInfo.rank", "distributedInfo", "baseTimeNanoseconds", "deviceProperties",
                 "deviceProperties.id", "deviceProperties.name", "traceEvents", "schemaVersion"]


def fam_types(rng, c):
    doc = c.doc
    c.doc_changed = True
    for _ in range(rng.choices([1, 2, 3], [6, 3, 1])[0]):
        t, v = other_type(rng)
        if rng.random() < 0.7:
            field = rng.choice(list(EVENT_FIELDS))
            idx, how = pick(rng, doc, rng.choice(EVENT_FIELDS[field]))
            for i in idx:
                e = doc.own(i)
                if isinstance(e, dict):
                    set_path(e, field, v)
            c.op(f"{field} of {how} ({len(idx)}) events := {t} {shown(v)}")
            continue
        field = rng.choice(HEADER_FIELDS)
        c.op(f"{field} := {t} {shown(v)}")
        if field == "distributedInfo.rank":
            di = dict(doc.get("distributedInfo") or {})
            di["rank"] = v
            doc.set("distributedInfo", di)
            if t == "int":
                c.collide = "may"
        elif field == "deviceProperties.id" or field == "deviceProperties.name":
            props = [dict(p) if isinstance(p, dict) else p for p in (doc.get("deviceProperties") or [{}])]
            if not isinstance(props, list) or not props:
                props = [{}]
            k = rng.randrange(len(props))
            if isinstance(props[k], dict):
                props[k][field.split(".")[1]] = v
            doc.set("deviceProperties", props)
        elif field == "traceEvents":
            doc.set("traceEvents", v)
            c.fate = "refused"
        else:
            doc.set(field, v)


def set_string(rng, c, s, target=None):
    """Puts the string s (str or Raw JSON text) into a name or argument of the victim."""
    doc = c.doc
    c.doc_changed = True
    target = target or rng.choice(["kernel name", "nccl name", "step name", "launch name", "arg Process Group Name",
                                   "arg dtype", "arg Collective name", "arg Call stack", "arg key", "metadata name"])
    cat = {"kernel name": "kernel", "nccl name": "nccl", "step name": "step", "launch name": "launch",
           "metadata name": "meta"}.get(target, "nccl" if target.startswith("arg ") and target != "arg Call stack" else "kernel")
    idx, how = pick(rng, doc, cat, rng.choice(["one", "one", "first", "some"]))
    for i in idx:
        e = doc.own(i)
        if not isinstance(e, dict):
            continue
        if target.endswith("name") and not target.startswith("arg"):
            e["name"] = s
        elif target == "arg key":
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            p = Pairs(list(args.items()))
            p.insert(0, (Raw(s) if isinstance(s, Raw) else s, 1))
            e["args"] = p
        else:
            set_path(e, "args." + target[4:], s)
    return f"{target} of {how} ({len(idx)}) events"


CHARS = [Raw(b'"\\u0000"'), Raw(b'"a\\u0000b"'), Raw(b'"\\""'), Raw(b'"\\\\"'), Raw(b'"x\\\\\\"y"'), Raw(b'"\\/\\b\\f\\n\\r\\t"'),
         Raw(b'"\\ud800"'), Raw(b'"\\udc00x"'), Raw(b'"\\uDBFF\\uDFFF"'), Raw(b'"\\u001b[31mred\\u001b[0m"'),
         Raw(b'"line\\nbreak"'), Raw(b'"\\u0001\\u001f\\u007f"'), Raw(b'"caf\\u00e9"'),
         Raw(b'"raw\x01ctl"'), Raw(b'"raw\nnewline"'), Raw(b'"tab\there"'), Raw(b'"\xff\xfe"'), Raw(b'"\xc0\x80"'),
         Raw(b'"\xe2\x82"'), Raw(b'"\xed\xa0\x80"'), Raw(b'"\xf4\x90\x80\x80"'), Raw(b'"caf\xc3\xa9"'),
         Raw(b'"\\x41"'), Raw(b'"\\u12"'), Raw(b'"\\"'), Raw(b'""'), Raw(b'"ncclDevKernel_AllReduce\\u0000_Sum_f32_RING_LL"'),
         Raw(b'"ProfilerStep#\\u0031\\u0032"'), Raw(b'"%s%n%x"')]


def fam_huge(rng, c):
    v = rng.choices(["event_string", "top_key", "top_value", "header_string", "chars", "backslashes", "step_number"],
                    [6, 2, 2, 1, 6, 2, 2])[0]
    size = rng.choices([70 * KB, MB, 20 * MB], [6, 3, 1])[0]
    if v == "event_string":
        c.op(f"{set_string(rng, c, big_string(rng, size))} := a string of {size >> 10} KiB")
    elif v == "chars":
        s = rng.choice(CHARS)
        c.op(f"{set_string(rng, c, s)} := {shown(s)}")
    elif v == "backslashes":
        n = rng.randrange(MB // 4, 3 * MB // 2)  # a run of escaped backslashes across the 1 MiB refill
        tail = rng.choice([b"", b'\\"', b"x", b'\\"\\\\'])
        s = Raw(b'"' + b"\\\\" * n + tail + b'"')
        c.op(f"{set_string(rng, c, s, rng.choice(['kernel name', 'arg Call stack', 'arg key']))} := "
             f"{n} escaped backslashes + {tail!r}")
    elif v == "step_number":
        s = rng.choice(["ProfilerStep#" + "9" * rng.choice([20, 70 * KB]), "ProfilerStep#-5", "ProfilerStep#",
                        "ProfilerStep#9223372036854775808", "ProfilerStep#1e5", "ProfilerStep#abc", "ProfilerStep# 3",
                        "ProfilerStep#0x10", "ProfilerStep#18446744073709551615"])
        c.op(f"{set_string(rng, c, s, 'step name')} := {shown(s)}")
    elif v == "top_key":
        size = rng.choice([5 * KB, 70 * KB, MB, 3 * MB])
        key = rng.choice(["k", "traceEvents", "\\\\"]) * (size // 2)
        value = rng.choice([1, "v", [1, 2], {"a": 1}])
        c.doc_changed = True
        pos = rng.randrange(1, len(c.doc.members) + 1)
        c.doc.members.insert(pos, [Raw(json.dumps(key).encode()), value])
        c.op(f"a top-level member named by {len(key) >> 10} KiB ({key[:12]!r}...) at {pos}")
        c.fate = "analysed"
    elif v == "top_value":
        c.doc_changed = True
        key = rng.choice(["traceName", "extra", "record_shapes"])
        value = big_string(rng, size) if rng.random() < 0.7 else [[i, "x" * 100] for i in range(size // 110)]
        c.doc.set(key, value)
        c.op(f"top-level {key} := {size >> 10} KiB")
        c.fate = "analysed"
    else:
        c.doc_changed = True
        key = rng.choice(["deviceProperties", "distributedInfo", "schemaVersion"])
        s = big_string(rng, size)
        if key == "deviceProperties":
            props = [dict(p) for p in c.doc.get("deviceProperties") or [{"id": 0}]]
            props[0]["name"] = s
            c.doc.set(key, props)
        elif key == "distributedInfo":
            di = dict(c.doc.get("distributedInfo") or {})
            di["backend"] = s
            c.doc.set(key, di)
        else:
            c.doc.set(key, s)
        c.op(f"{key} holds a string of {size >> 10} KiB")


def fam_over64(rng, c):
    v = rng.choice(["kernel_pad", "cpu_op_stack", "string_element", "number_element", "under", "member"])
    size = (rng.randrange(66, 80) if v != "under" else rng.randrange(56, 62)) * MB
    c.op(f"{v}: {size >> 20} MiB")
    pad = "p" * size
    c.doc_changed = True
    ev = c.doc.events
    at = rng.randrange(0, len(ev) + 1)
    if v == "kernel_pad":
        k = copy.deepcopy(ev[pick(rng, c.doc, "kernel", "one")[0][0]])
        k["args"]["pad"] = pad
        ev.insert(at, k)
    elif v in ("cpu_op_stack", "under"):
        ev.insert(at, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5000000.0, "dur": 1,
                       "args": {"Call stack": pad}})
    elif v == "string_element":
        ev.insert(at, pad)
    elif v == "number_element":
        ev.insert(at, Raw(b"1" * size))
    else:
        di = dict(c.doc.get("distributedInfo") or {})
        di["pad"] = pad
        c.doc.set("distributedInfo", di)
    if v == "under":
        c.fate = "analysed"
    elif v == "member":
        c.warn = r"64 MB|distributedInfo"
    else:
        c.fate, c.warn = "analysed", r"over 64 MB"
    c.mem_bound = 600


def fam_missing(rng, c):
    doc = c.doc
    c.doc_changed = True
    v = rng.choices(["field", "header", "dup_key", "dup_member", "reorder", "duplicate_events", "empty_events",
                     "no_events", "no_kernels", "no_launches"], [8, 3, 3, 2, 3, 2, 1, 1, 1, 1])[0]
    if v == "field":
        for _ in range(rng.choices([1, 2], [3, 1])[0]):
            field = rng.choice(["ph", "ts", "dur", "cat", "name", "args", "args.correlation", "args.stream", "args.device",
                                "pid", "tid"])
            idx, how = pick(rng, doc, rng.choice(["kernel", "nccl", "launch", "step", "any", "copy"]))
            for i in idx:
                if isinstance(doc.events[i], dict):
                    del_path(doc.own(i), field)
            c.op(f"{field} removed from {how} ({len(idx)}) events")
    elif v == "header":
        key = rng.choice(["distributedInfo", "distributedInfo.rank", "baseTimeNanoseconds", "deviceProperties", "schemaVersion"])
        if key == "distributedInfo.rank":
            di = dict(doc.get("distributedInfo") or {})
            di.pop("rank", None)
            doc.set("distributedInfo", di)
        else:
            doc.drop(key)
        c.op(f"{key} removed")
    elif v == "dup_key":
        field = rng.choice(["ts", "name", "args", "ph", "cat", "dur"])
        idx, how = pick(rng, doc, rng.choice(["kernel", "nccl", "launch", "any"]))
        for i in idx:
            e = doc.events[i]
            if not isinstance(e, dict) or field not in e:
                continue
            p = Pairs(copy.deepcopy(list(e.items())))
            other = {"ts": 1.0, "name": "other", "args": {}, "ph": "i", "cat": "cpu_op", "dur": -5}[field]
            p.insert(rng.randrange(len(p) + 1), (field, other))
            doc.events[i] = p
        c.op(f"{field} twice in {how} ({len(idx)}) events")
    elif v == "dup_member":
        key = rng.choice(["traceEvents", "traceEvents", "distributedInfo", "baseTimeNanoseconds"])
        if key == "traceEvents":
            ev = doc.events
            half = rng.random() < 0.5
            doc.members = [m for m in doc.members if m[0] != "traceEvents"]
            a, b = (ev[:len(ev) // 2], ev[len(ev) // 2:]) if half else (ev, list(ev))
            doc.members.insert(1, ["traceEvents", a])
            doc.members.append(["traceEvents", b])
            c.op("traceEvents twice" + (" (split in halves)" if half else " (the same events)"))
        elif key == "distributedInfo":
            di = dict(doc.get("distributedInfo") or {})
            di["rank"] = rng.choice([1 - c.victim, 5])
            doc.members.append(["distributedInfo", di])
            c.collide = "may"
            c.op(f"distributedInfo twice, the second claiming {di['rank']}")
        else:
            doc.members.insert(0, ["baseTimeNanoseconds", 1])
            doc.members.append(["baseTimeNanoseconds", BASE_NS + 7])
            c.op("baseTimeNanoseconds twice")
    elif v == "reorder":
        how = rng.choice(["shuffle", "reverse", "ts_desc", "header_last"])
        ev = doc.events
        if how == "shuffle":
            rng.shuffle(ev)
        elif how == "reverse":
            ev.reverse()
        elif how == "ts_desc":
            ev.sort(key=lambda e: -e.get("ts", 0) if isinstance(e, dict) and isinstance(e.get("ts"), (int, float)) else 0)
        else:
            doc.members.sort(key=lambda m: m[0] != "traceEvents")
        c.op(f"reordered: {how}")
    elif v == "duplicate_events":
        ev = doc.events
        how = rng.choice(["all", "some", "one_kernel_1000"])
        if how == "all":
            ev[:] = [e for e in ev for _ in (0, 1)]
        elif how == "some":
            for i in sorted(rng.sample(range(len(ev)), max(1, len(ev) // 5)), reverse=True):
                ev.insert(i, ev[i])
        else:
            i = pick(rng, doc, "kernel", "one")[0][0]
            ev[i:i] = [ev[i]] * 1000
        c.op(f"events duplicated: {how}")
    elif v == "empty_events":
        doc.set("traceEvents", [])
        c.op("traceEvents empty")
        c.fate = "refused"
    elif v == "no_events":
        doc.drop("traceEvents")
        c.op("no traceEvents")
        c.fate, c.phrase = "refused", "traceEvents"
    elif v == "no_kernels":
        doc.events[:] = [e for e in doc.events if not CATEGORIES["kernel"](e)]
        c.op("no kernel events")
        c.fate = "refused"
    else:
        doc.events[:] = [e for e in doc.events if not CATEGORIES["runtime"](e)]
        c.op("no cuda_runtime events")
        c.fate = "analysed"


def insert_at(data, i, b):
    return data[:i] + b + data[i:]


def fam_structure(rng, c):
    v = rng.choices(["unbalanced", "stray_brace", "stray_comma", "flip", "bom", "trailing", "minified", "crlf",
                     "whitespace", "nul", "deep", "quote", "junk_file"], [3, 3, 3, 4, 1, 2, 2, 1, 1, 1, 1, 1, 2])[0]
    r = random.Random(rng.random())  # the byte changes draw from their own stream
    if v in ("minified", "bom") or (v not in ("junk_file",) and rng.random() < 0.15):
        c.style = "minified"
        c.doc_changed = True
        c.op("minified (one line)")
    if v == "unbalanced":
        ch = r.choice([b"{", b"}", b"[", b"]"])
        mode = r.choice(["remove", "insert"])

        def unbalanced(d, ch=ch, mode=mode):
            lo, hi = event_region(d)
            if mode == "remove":
                at = [m.start() for m in re.finditer(re.escape(ch), d)] or [0]
                i = r.choice(at)
                return d[:i] + d[i + 1:]
            return insert_at(d, r.randrange(lo, hi), ch)
        c.post.append(unbalanced)
        c.op(f"{mode} one {ch.decode()}")
    elif v == "stray_brace":
        ch = r.choice([b"}", b"]", b"{", b"[", b"}}", b"]]", b"},", b"]," , b"{}", b"[]"])
        where = r.choice(["between_events", "after_open", "before_close", "top_level", "in_event"])

        def stray(d, ch=ch, where=where):
            lo, hi = event_region(d)
            if where == "between_events":
                at = [m.end() for m in re.finditer(rb"\},", d[lo:hi])] or [0]
                return insert_at(d, lo + r.choice(at), ch)
            if where == "after_open":
                return insert_at(d, d.find(b"[", lo) + 1, ch)
            if where == "before_close":
                return insert_at(d, hi, ch)
            if where == "top_level":
                return insert_at(d, d.find(b'"traceEvents"'), ch + b",")
            at = [m.end() for m in re.finditer(rb", ", d[lo:hi])] or [0]
            return insert_at(d, lo + r.choice(at), ch)
        c.post.append(stray)
        c.op(f"stray {ch.decode()} {where}")
    elif v == "stray_comma":
        where = r.choice(["between_events", "after_open", "before_close", "after_event_brace", "top_level", "before_end"])

        def comma(d, where=where):
            lo, hi = event_region(d)
            if where == "between_events":
                at = [m.end() for m in re.finditer(rb"\},", d[lo:hi])] or [0]
                return insert_at(d, lo + r.choice(at), b",")
            if where == "after_open":
                return insert_at(d, d.find(b"[", lo) + 1, b",")
            if where == "before_close":
                return insert_at(d, hi, b",")
            if where == "after_event_brace":
                at = [m.end() for m in re.finditer(rb"\{", d[lo:hi])] or [0]
                return insert_at(d, lo + r.choice(at), b",")
            if where == "top_level":
                return insert_at(d, d.find(b'"traceEvents"'), b",")
            return insert_at(d, d.rstrip().rfind(b"}"), b",")
        c.post.append(comma)
        c.op(f"stray comma {where}")
    elif v == "flip":
        n = r.randint(1, 8)

        def flip(d, n=n):
            d = bytearray(d)
            for _ in range(n):
                i = r.randrange(len(d))
                d[i] ^= r.choice([1 << r.randrange(8), r.randrange(1, 256)])
            return bytes(d)
        c.post.append(flip)
        c.op(f"{n} bytes flipped")
    elif v == "bom":
        c.post.append(lambda d: b"\xef\xbb\xbf" + d)
        c.op("UTF-8 BOM")
        c.fate = "analysed"
    elif v == "trailing":
        junk = r.choice([b"garbage", b"{}", b"\x00" * 10, b"]", b"}", b",{\"traceEvents\": []}", bytes(r.randrange(256) for _ in range(40)),
                         b"\n\n\n", None])
        c.post.append((lambda d: d + d) if junk is None else (lambda d, j=junk: d + j))
        c.op("trailing: " + ("the whole file again" if junk is None else repr(junk[:20])))
    elif v == "minified":
        c.fate = "analysed"
    elif v == "crlf":
        c.post.append(lambda d: d.replace(b"\n", b"\r\n"))
        c.op("CRLF line ends")
        c.fate = "analysed"
    elif v == "whitespace":
        c.post.append(lambda d: b"\n\t \r\n" + d.replace(b", ", b" ,\t\n ").replace(b": ", b"\t:\r\n"))
        c.op("blanks everywhere")
        c.fate = "analysed"
    elif v == "nul":
        c.post.append(lambda d: insert_at(d, r.randrange(len(d)), b"\x00" * r.choice([1, 4, 100])))
        c.op("NUL bytes inserted")
    elif v == "deep":
        depth = r.choice([100, 2000, 100000, 1000000])
        where = r.choice(["event_arg", "top_member", "element", "distributedInfo"])
        nest = Raw(b"[" * depth + b"1" + b"]" * depth)
        c.doc_changed = True
        if where == "event_arg":
            i = pick(rng, c.doc, "kernel", "one")[0][0]
            c.doc.own(i)["args"]["deep"] = nest
        elif where == "top_member":
            c.doc.members.insert(1, ["deep", nest])
        elif where == "element":
            c.doc.events.insert(r.randrange(len(c.doc.events)), nest)
        else:
            di = dict(c.doc.get("distributedInfo") or {})
            di["deep"] = nest
            c.doc.set("distributedInfo", di)
        c.op(f"nesting {depth} deep: {where}")
    elif v == "quote":
        def quote(d):
            lo, hi = event_region(d)
            at = [m.start() for m in re.finditer(rb'"', d[lo:hi])] or [0]
            i = lo + r.choice(at)
            return d[:i] + r.choice([b"'", b"", b'""', b"\\\""]) + d[i + 1:]
        c.post.append(quote)
        c.op("a quote replaced")
    else:
        junk = r.choice([b"", b" ", b"{}", b"[]", b"null", b"{\"traceEvents\": [", b"{\"traceEvents\": []}", b"\xef\xbb\xbf",
                         b"{" * 1000, b"{\"schemaVersion\": 1}", b"{\"schemaVersion\": 1, \"traceEvents\": [}",
                         b"{\"schemaVersion\": 1, \"traceEvents\": [}]}", b"{\"schemaVersion\": 1, \"traceEvents\": [{}}]}",
                         b"{\"traceEvents\": [" + b"}" * 100 + b"]}", b"{\"traceEvents\": [\"" + b"\\" * 1001,
                         bytes(r.randrange(256) for _ in range(1024))])
        c.data = junk
        c.op(f"the whole file: {junk[:48]!r}")
        c.fate = "refused"


US_2P61 = (1 << 61) / 1000.0  # 2^61 ns in microseconds


def fam_times(rng, c):
    doc = c.doc
    c.doc_changed = True
    v = rng.choices(["ts_value", "dur_value", "identical_ts", "base", "epoch_far", "shift", "first_extreme"], [5, 3, 2, 3, 2, 2, 2])[0]
    if v in ("ts_value", "dur_value"):
        field = "ts" if v == "ts_value" else "dur"
        value = rng.choice([1e20, -1e20, Raw(b"1e20"), Raw(b"2305843009213693.951"), Raw(b"2305843009213693.953"),
                            Raw(b"-2305843009213693.953"), Raw(b"-2305843009213693.951"), Raw(b"9223372036854775.807"),
                            Raw(b"9223372036854775808"), 0, -1, -1e-3, Raw(b"1.694128201436271e15"),
                            Raw(b"1.000000000000000000000000000001"), 1e-30, Raw(b"-0"), Raw(b"4611686018427387.904")])
        idx, how = pick(rng, doc, rng.choice(["kernel", "nccl", "launch", "step", "any"]))
        for i in idx:
            if isinstance(doc.events[i], dict):
                doc.own(i)[field] = value
        c.op(f"{field} of {how} ({len(idx)}) events := {shown(value)}")
    elif v == "identical_ts":
        value = rng.choice([5000000.0, 0, 1694128201436271, -1])
        zero = rng.random() < 0.5
        for i, e in enumerate(doc.events):
            if isinstance(e, dict):
                e = doc.own(i)
                e["ts"] = value
                if zero and "dur" in e:
                    e["dur"] = 0
        c.op(f"every ts := {value}" + (", every dur := 0" if zero else ""))
    elif v == "base":
        value = rng.choice([Raw(b"9223372036854775807"), Raw(b"-9223372036854775808"), Raw(b"2305843009213693951"),
                            Raw(b"2305843009213693953"), Raw(b"-2305843009213693953"), 0, -1, 1e18, Raw(b"9223372036854775808"),
                            Raw(b"-2305843009213693951")])
        doc.set("baseTimeNanoseconds", value)
        c.op(f"baseTimeNanoseconds := {shown(value)}")
    elif v == "epoch_far":
        sign = rng.choice([1, -1])
        base = sign * ((1 << 61) - rng.choice([1, 1000, 10 ** 12]))
        doc.set("baseTimeNanoseconds", base)
        shift = sign * rng.choice([US_2P61 * 0.999, US_2P61 * 0.5, 1e15])
        for i, e in enumerate(doc.events):
            if isinstance(e, dict) and isinstance(e.get("ts"), (int, float)):
                doc.own(i)["ts"] = e["ts"] + shift
        c.op(f"baseTimeNanoseconds := {base}, every ts + {shift:.6g} us")
    elif v == "shift":
        shift = rng.choice([1e15, -1e15, 3e15, -3e15, 1e17, 2.2e15])
        for i, e in enumerate(doc.events):
            if isinstance(e, dict) and isinstance(e.get("ts"), (int, float)):
                doc.own(i)["ts"] = e["ts"] + shift
        c.op(f"every ts + {shift:.6g} us")
    else:
        value = rng.choice([Raw(b"2305843009213693.951"), Raw(b"-2305843009213693.951"), 1e15, -1e15, 0])
        i = pick(rng, doc, rng.choice(["kernel", "launch", "step"]), "first")[0][0]
        doc.own(i)["ts"] = value
        doc.events.insert(0, doc.events.pop(i))
        c.op(f"the first used event's ts := {shown(value)} (moved first)")


def fam_ranks(rng, c):
    doc = c.doc
    c.doc_changed = True
    synth = c.seed.name == "synth"
    other = 1 - c.victim
    v = rng.choices(["same_claim", "claim_big", "claim_negative", "claim_max", "claim_plausible", "name_disagree",
                     "name_collides", "claim_string", "claim_dup_key", "swapped"], [4, 2, 2, 1, 1, 2, 1, 1, 1, 1])[0]
    di = dict(doc.get("distributedInfo") or {})

    def claim(value):
        d = dict(di)
        d["rank"] = value
        doc.set("distributedInfo", d)
    if v == "same_claim":
        claim(other)
        c.collide = "must"
        c.op(f"claims rank {other}, as the healthy file does")
    elif v in ("claim_big", "claim_negative", "claim_string"):
        value = {"claim_big": rng.choice([2 ** 31, 2 ** 32, 2 ** 63 - 1, Raw(b"1e10"), (1 << 21) + 1]),
                 "claim_negative": rng.choice([-1, -2 ** 31, Raw(b"-9223372036854775808")]),
                 "claim_string": rng.choice(["0", "1", ""])}[v]
        claim(value)
        c.op(f"claims rank {shown(value)}")
        c.fate = "analysed" if synth else "any"  # ignored: the file name's rank (synthetic), else numbered by file
    elif v == "claim_max":
        value = rng.choice([1 << 21, 96, 1000, (1 << 21) - 1])
        claim(value)
        c.op(f"claims rank {value}")
        if isinstance(di.get("world_size"), int) and 0 < di["world_size"] <= value < (1 << 21):
            c.fate, c.line = "refused", r"not of this job"  # beyond its own world_size: another job's (issue 36)
        else:
            c.rc, c.line = [2], r"process ids|beyond"
    elif v == "claim_plausible":
        value = rng.choice([2, 7, 31, 95])
        claim(value)
        c.op(f"claims rank {value}")
        world = di.get("world_size")
        c.fate = "refused" if isinstance(world, int) and 0 < world <= value else "analysed"
        if c.fate == "refused":
            c.line = r"not of this job"
    elif v == "name_disagree":
        c.name = rng.choice(["rank_7.json", "rank_%d.json" % other + ".gz", "trace.rank_5.json"])
        if c.name.endswith(".gz"):
            c.container = "gz"
        c.op(f"named {c.name}, claims {c.victim}")
        c.fate = "analysed"
    elif v == "name_collides":
        di.pop("rank", None)
        doc.set("distributedInfo", di)
        c.name = "rank_%d.json.gz" % other if synth else "rank_%d.json" % other
        c.container = "gz" if synth else "json"
        c.op(f"no claim, named {c.name} (the healthy file's rank)")
        c.collide = "must"
    elif v == "claim_dup_key":
        p = Pairs([(k, x) for k, x in di.items() if k != "rank"])
        p += [("rank", c.victim), ("rank", other)]
        doc.set("distributedInfo", p)
        c.op(f"rank twice in distributedInfo: {c.victim}, then {other}")
        c.collide = "may"
    else:  # the names say one rank, the claims the other (synthetic) or claims swapped
        claim(c.victim)
        c.name = "rank_%d.json" % other + (".gz" if synth else "")
        c.container = "gz" if synth else "json"
        c.op(f"named {c.name}, claims {c.victim}")
        c.fate = "analysed"


FAMILIES = {"truncate": (fam_truncate, 14), "gz": (fam_gz, 10), "types": (fam_types, 17), "huge": (fam_huge, 10),
            "over64": (fam_over64, 1.5), "missing": (fam_missing, 14), "structure": (fam_structure, 14),
            "times": (fam_times, 9), "ranks": (fam_ranks, 9)}


def pick_family(fuzz_seed, index, weights):
    rng = random.Random(f"kineto:{fuzz_seed}:{index}:family")
    return rng.choices(list(weights), list(weights.values()))[0]


def build_case(args, seeds, index, casedir):
    family = pick_family(args.seed, index, args.family_weights)
    rng = random.Random(f"kineto:{args.seed}:{index}")
    names = sorted(seeds)
    seed = seeds[rng.choices(names, [{"synth": 3, "dlrm": 2}[n] for n in names])[0]]
    victim = rng.choice([0, 1])
    healthy_gz = rng.random() < 0.15
    c = Case(seed, victim, rng)
    if seed.name == "dlrm":  # no rank in the names: a victim whose claim is lost is numbered, maybe as the healthy one
        c.collide = "may"
    FAMILIES[family][0](rng, c)
    data = c.plain_bytes()
    vname = c.name or seed.files[victim][0] + (".gz" if c.container == "gz" else "")
    if c.container == "gz":
        data = gz(data)
        for f in c.gz_post:
            data = f(data)
    hname, hdata = seed.files[1 - victim][0], seed.files[1 - victim][1]
    if healthy_gz and hname + ".gz" != vname:
        hname, hdata = hname + ".gz", gz(hdata)
    shutil.rmtree(casedir, ignore_errors=True)
    os.makedirs(casedir)
    with open(os.path.join(casedir, vname), "wb") as f:
        f.write(data)
    with open(os.path.join(casedir, hname), "wb") as f:
        f.write(hdata)
    desc = {"kind": "kineto", "variant": family, "seed": seed.name, "fuzz_seed": args.seed, "case": index,
            "victim": vname, "healthy": hname, "ops": c.ops, "fate": c.fate, "bytes": len(data)}
    for k in ("phrase", "warn", "collide", "line", "mem_bound"):
        if getattr(c, k):
            desc[k] = getattr(c, k)
    if c.rc != [0]:
        desc["expect_rc"] = c.rc
    return desc


# ---------------------------------------------------------------------------------------------
# Expectations


def expect_kineto(desc):
    """Exit 0 (or desc["expect_rc"]); on exit 0 check_kineto; on another allowed exit one line saying desc["line"]."""
    e = {"rc": set(desc.get("expect_rc", [0])), "check": lambda outdir, err: check_kineto(desc, outdir, err)}
    if desc.get("line"):
        e["line"] = e["ok_line"] = desc["line"]
    return e


def check_kineto(desc, outdir, err):
    """Exit 0: both outputs; the healthy rank analysed (unless both files claim one rank and it lost,
    then the victim was); each refused file named by exactly one stderr line; the victim's fate
    (analysed, refused, any), the phrase of its refusal, a warning naming it; "already claimed" for
    exactly one file where both must claim one rank."""
    for f in ("scan.h5", "summary.json"):
        if not os.path.isfile(os.path.join(outdir, f)):
            return [f"exit 0 without {f}"]
    try:
        with open(os.path.join(outdir, "summary.json"), encoding="utf-8") as f:
            s = json.load(f)
    except (OSError, ValueError) as e:
        return [f"exit 0 without a readable summary.json ({type(e).__name__})"]
    failed = {}
    for r in s.get("ranks_failed", []):
        failed[os.path.basename(str(r.get("file")))] = str(r.get("error"))
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith("straggler-scan: warning:")]
    warns = [l for l in err.splitlines() if l.startswith("straggler-scan: warning:")]
    v, h = desc["victim"], desc["healthy"]
    problems = []
    for f in sorted(failed):
        if f not in (v, h):
            problems.append(f"ranks_failed names {f}, no file of the case")
            continue
        said = [l for l in lines if f in l]
        if len(said) != 1:
            problems.append(f"stderr: {len(said)} lines name refused {'victim' if f == v else 'healthy'} file, expected 1")
    collide = desc.get("collide")
    claimed = [f for f in (v, h) if f in failed and "already claimed" in failed[f]]
    if collide == "must" and len(claimed) != 1:
        problems.append(f"both files claim one rank, expected one 'already claimed', got {[e[:80] for e in failed.values()]}")
    elif collide == "must" and not any("already claimed" in l for l in lines if claimed[0] in l):
        problems.append("no stderr line says 'already claimed'")
    if h in failed and not (collide and h in claimed and v not in failed):
        problems.append(f"healthy {h} not analysed: {failed[h][:160]}")
    fate = desc.get("fate", "any")
    refused = set(failed) & {v, h}
    # A file whose first bytes are no trace is passed over by discovery, neither read nor reported
    # (ranks/discovery.cpp): the victim is then neither analysed nor in ranks_failed.
    passed_over = v not in failed and h not in failed and s.get("ranks") == 1
    LAST["passed_over"] = passed_over
    if fate == "refused" and v not in failed and not passed_over:
        problems.append(f"victim analysed, expected refused ({'; '.join(desc.get('ops', []))[:100]})")
    if fate == "analysed" and ((v in failed and not (collide and v in claimed)) or passed_over):
        problems.append("victim passed over (not read, not reported), expected analysed" if passed_over else
                        f"victim refused, expected analysed: {failed[v][:160]}")
    if desc.get("phrase") and v in failed and not re.search(desc["phrase"], failed[v]):
        problems.append(f"victim refused, but not saying '{desc['phrase']}': {failed[v][:120]}")
    if desc.get("warn") and v not in failed and not any(v in l and re.search(desc["warn"], l) for l in warns):
        problems.append(f"no warning naming the victim saying '{desc['warn']}'")
    want = 2 - len(refused) - (1 if passed_over else 0)
    if s.get("ranks") != want:
        problems.append(f"summary: {s.get('ranks')} ranks analysed, expected {want}")
    return problems


LAST = {}  # what check_kineto saw of the last case (for its outcome line)
oracle.EXTRA_KINDS["kineto"] = expect_kineto


# ---------------------------------------------------------------------------------------------
# Running


def run_one(args, casedir, desc, outdir):
    """oracle.run_case, plus the peak RSS bound of a described case (release builds: the largest RSS
    of the children so far grew during this run and beyond desc["mem_bound"] MiB)."""
    before = peak_rss_mib()
    LAST.clear()
    res = oracle.run_case(args.scan, casedir, desc["healthy"], args.timeout, outdir, desc=desc)
    after = peak_rss_mib()
    res["peak_mib"] = after if after > before else None
    res["signature"] = re.sub(r"0x[0-9a-f]+", "ADDR", res["signature"])  # "heap-buffer-overflow on address 0x..."
    if LAST.get("passed_over") and res["rc"] == 0:
        res["outcome"] = "exit 0, victim passed over"
    if desc.get("mem_bound") and not oracle.is_sanitized(args.scan) and res["peak_mib"] and after > desc["mem_bound"]:
        res["problems"].append(f"peak RSS {after} MiB, bound {desc['mem_bound']} MiB")
        res["ok"] = False
        res["signature"] = res["signature"] or f"[kineto:{desc['variant']}] peak RSS over the bound"
    return res


def replay_corpus(args, open_sigs):
    """fuzz_nsys's corpus replay, with this fuzzer's runner (peak RSS bounds) and one more reason a
    pass proves nothing: a memory bound on a sanitizer build."""
    def unproven(desc, res):
        if any(p.startswith("sanitizer") for p in desc.get("problems", [])) and not oracle.is_sanitized(args.scan):
            return "only a sanitizer build can tell"
        if desc.get("mem_bound") and oracle.is_sanitized(args.scan):
            return "only a release build can tell (peak RSS)"
        return ""

    return nsys_replay_corpus(args, open_sigs, run=lambda c, d, o: run_one(args, c, d, o), unproven=unproven,
                              known_open=True)


def parse_families(spec):
    if not spec:
        return {k: w for k, (_, w) in FAMILIES.items()}
    out = {}
    for item in spec.split(","):
        name, _, w = item.partition("=")
        if name not in FAMILIES:
            sys.exit(f"--families: unknown family {name} (known: {', '.join(FAMILIES)})")
        out[name] = float(w) if w else FAMILIES[name][1]
    return out


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss >> 10


def fuzz(args):
    t0 = time.time()
    open_sigs = set()
    corpus_failed = replay_corpus(args, open_sigs)
    if args.replay_only:
        return 1 if corpus_failed else 0
    seeds = make_seeds(args)
    seen, known, outcomes, hits = {}, collections.Counter(), collections.Counter(), collections.Counter()
    by_family = collections.defaultdict(collections.Counter)
    cases, peak, peak_case = 0, 0, None
    indices = [args.case] if args.case is not None else range(args.first, 1 << 62)
    sanitized = oracle.is_sanitized(args.scan)
    for i in indices:
        if args.case is None and (time.time() - t0 >= args.minutes * 60 if args.minutes else i >= args.first + args.cases):
            break
        casedir = os.path.join(args.workdir, "case")
        desc = build_case(args, seeds, i, casedir)
        res = run_one(args, casedir, desc, os.path.join(args.workdir, "out"))
        if res["peak_mib"]:
            peak, peak_case = res["peak_mib"], i
        cases += 1
        if args.verbose:
            print(f"case {i} {desc['variant']} {desc['seed']} {desc['victim']} ({desc['bytes']} B): {'; '.join(desc['ops'])[:150]}"
                  f" -> {res['outcome']} {res['secs']:.1f} s" + ("" if res["ok"] else " FAIL " + res["signature"][:80])
                  + "".join(f"\n    {l[:200]}" for l in res["stderr"].splitlines()[:3]), flush=True)
        outcomes[res["outcome"]] += 1
        by_family[desc["variant"]][res["outcome"] if res["ok"] else "FAIL: " + res["signature"][:70]] += 1
        if not res["ok"]:
            sig = res["signature"]
            hits[sig] += 1
            if sig in open_sigs:
                known[sig] += 1
            elif sig not in seen:
                seen[sig] = i
                dest = os.path.join(args.workdir, "findings", slug(sig))
                save_case(dest, casedir, desc, res)
                print(f"case {i} ({desc['variant']}: {'; '.join(desc['ops'])[:160]}): NEW {sig}\n  "
                      + "\n  ".join(res["problems"][:4]) + f"\n  saved in {dest}", flush=True)
        if args.case is not None:
            print(json.dumps({"desc": desc, "result": res}, indent=1)[:20000])
        else:
            shutil.rmtree(casedir, ignore_errors=True)
            if cases % 100 == 0:
                print(f"{cases} cases, {len(seen)} findings, {time.time() - t0:.0f} s", flush=True)
    print(f"\n{cases} cases in {time.time() - t0:.0f} s (seed {args.seed}, cases {args.first}-{args.first + cases - 1}; "
          f"{'sanitizer' if sanitized else 'release'} build)")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
    for fam in sorted(by_family, key=lambda k: -sum(by_family[k].values())):
        print(f"  {fam} ({sum(by_family[fam].values())}): " + ", ".join(f"{k} {v}" for k, v in by_family[fam].most_common()))
    if peak_case is not None:
        print(f"largest peak RSS of straggler-scan: {peak} MiB (case {peak_case})")
    for sig, n in known.items():
        print(f"known open (corpus): {sig} x{n}")
    print(f"findings: {len(seen)} new" + "".join(f"\n  case {i}: {s} (x{hits[s]})" for s, i in seen.items()))
    if corpus_failed:
        print(f"corpus: {corpus_failed} case(s) marked fixed fail again")
    return 1 if seen or corpus_failed else 0


# ---------------------------------------------------------------------------------------------
# --big: one file of about 1 GiB on one line, streamed to disk


def write_big_events(path, target):
    """Header, then small events (a launch, its kernel, a CPU op, a flow; every 400th kernel an
    NCCL all-reduce, a step range every 4,000 events) on one line until the file holds target bytes."""
    head = (b'{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H100 80GB HBM3"}],'
            b'"distributedInfo":{"backend":"nccl","rank":0,"world_size":1},"traceEvents":[')
    launch = ('{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":4100,"tid":4100,"ts":%.3f,"dur":5.5,'
              '"args":{"External id":%d,"cbid":211,"correlation":%d}}')
    kernel = ('{"ph":"X","cat":"kernel","name":"%s","pid":0,"tid":%d,"ts":%.3f,"dur":%.3f,"args":{"External id":%d,'
              '"queued":0,"device":0,"context":1,"stream":%d,"correlation":%d,"registers per thread":32,'
              '"grid":[128,1,1],"block":[256,1,1]}}')
    cpu = ('{"ph":"X","cat":"cpu_op","name":"aten::add_","pid":4100,"tid":4100,"ts":%.3f,"dur":8.25,'
           '"args":{"External id":%d,"Record function id":0,"Ev Idx":%d,"Sequence number":77}}')
    flow = '{"ph":"f","id":%d,"pid":0,"tid":7,"ts":%.3f,"cat":"ac2g","name":"ac2g","bp":"e"}'
    step = '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":4100,"tid":4100,"ts":%.3f,"dur":%.3f}'
    n, size, t, corr = 0, 0, 5_000_000.0, 1
    tail = b'],"traceName":"big.json","baseTimeNanoseconds":%d}' % BASE_NS
    with open(path, "wb", buffering=8 * MB) as f:
        f.write(head)
        size += len(head)
        first = True
        while size < target - len(tail):
            parts = []
            for _ in range(1000):
                if corr % 1000 == 1:
                    parts.append(step % (corr // 1000, t, 1000 * 30.0 - 1))
                nccl = corr % 400 == 0
                parts.append(cpu % (t, corr, corr))
                parts.append(launch % (t + 1, corr, corr))
                parts.append(kernel % (NCCL_KERNEL if nccl else "void at::native::vectorized_elementwise_kernel<4>",
                                       20 if nccl else 7, t + 10, 15.0 if nccl else 4.5, corr, 20 if nccl else 7, corr))
                parts.append(flow % (corr, t + 10))
                t += 30.0
                corr += 1
                n += 4
            chunk = ("" if first else ",") + ",".join(parts)
            first = False
            b = chunk.encode()
            f.write(b)
            size += len(b)
        f.write(tail)
        size += len(tail)
    return n, size


def write_big_string(path, target):
    """A small valid trace (the synthetic rank 0) whose traceEvents start with one kernel event
    whose name is a string of target bytes."""
    doc = Doc(synth_trace(0), {})
    text = doc.serialize("minified")
    i = text.find(b'"traceEvents":[') + len(b'"traceEvents":[')
    with open(path, "wb") as f:
        f.write(text[:i])
        f.write(b'{"ph":"X","cat":"kernel","pid":0,"tid":7,"ts":5000001.0,"dur":3,"args":{"stream":7,"correlation":1},"name":"')
        chunk = b"x" * (16 * MB)
        left = target
        while left > 0:
            f.write(chunk[:min(left, len(chunk))])
            left -= min(left, len(chunk))
        f.write(b'"},')
        f.write(text[i:])
    return os.path.getsize(path)


def big(args):
    """Runs straggler-scan on one big single-line file at a time, under an address-space cap and a
    timeout, and reports its exit, its stderr, its peak RSS (/usr/bin/time) and its time."""
    cap = args.big_mem_mb * MB
    target = args.big_mb * MB
    sanitized = oracle.is_sanitized(args.scan)
    results = []
    for what in ("events", "string"):
        d = os.path.join(args.workdir, "big-" + what)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        path = os.path.join(d, "rank_0.json")
        t = time.time()
        if what == "events":
            n, size = write_big_events(path, target)
            label = f"{size / MB:.0f} MiB, {n} events on one line"
        else:
            size = write_big_string(path, target)
            label = f"{size / MB:.0f} MiB, one kernel event with a {target >> 20} MiB name"
        print(f"big {what}: wrote {label} in {time.time() - t:.0f} s", flush=True)
        out = os.path.join(args.workdir, "big-out")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        timef = os.path.join(out, "time.txt")
        cmd = ["/usr/bin/time", "-f", "%M %e", "-o", timef, args.scan, d, "-o", os.path.join(out, "scan.h5"),
               "--summary", os.path.join(out, "summary.json")]

        def limit(cap=cap):
            if not sanitized:
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        t = time.time()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=oracle.child_env(args.scan),
                             start_new_session=True, preexec_fn=limit)
        try:
            so, se = p.communicate(timeout=args.big_timeout)
            hung = False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            so, se = p.communicate()
            hung = True
        secs = time.time() - t
        err = se.decode("utf-8", "replace")
        rss, el = "?", "?"
        try:
            with open(timef) as f:
                last = f.read().strip().splitlines()[-1].split()
                rss, el = int(last[0]) >> 10, last[1]
        except (OSError, IndexError, ValueError):
            pass
        lines = [l for l in err.splitlines() if l.strip()]
        errors = [l for l in lines if not l.startswith("straggler-scan: warning:") and not l.startswith("Command ")]
        ok = not hung and p.returncode in (0, 2) and len(errors) <= 1 and not any(m in err for m in oracle.SAN_MARKERS)
        summary = ""
        if p.returncode == 0:
            try:
                with open(os.path.join(out, "summary.json")) as f:
                    s = json.load(f)
                summary = f"ranks {s.get('ranks')}, failed {[str(r.get('error'))[:100] for r in s.get('ranks_failed', [])]}"
            except (OSError, ValueError) as e:
                summary, ok = f"unreadable summary ({e})", False
        res = (f"big {what} ({label}): {'hang (killed after %d s)' % args.big_timeout if hung else 'exit %s' % p.returncode}"
               f" in {secs:.1f} s (time: {el} s), peak RSS {rss} MiB (cap {args.big_mem_mb} MiB address space"
               f"{', not applied: sanitizer build' if sanitized else ''}); {summary}; stderr: {lines[:4]}"
               f" -> {'OK' if ok else 'PROBLEM'}")
        print(res, flush=True)
        results.append(ok)
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    return 0 if all(results) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scan", required=True)
    ap.add_argument("--workdir", help="scratch folder (default: a new one under /tmp; findings stay there)")
    ap.add_argument("--real", default=next((p for p in (os.path.join(oracle.ROOT, "..", "shared", "data", "real"),
                                                        "/work/shared/data/real") if os.path.isdir(p)), None),
                    help="folder of real traces: param/dlrm_kineto/dlrm_kineto.tar.gz (skipped when absent)")
    ap.add_argument("--corpus", default=os.path.join(HERE, "corpus", "kineto"), help="saved cases to replay first")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--minutes", type=float)
    ap.add_argument("--case", type=int, help="run only this case, print it and keep its directory")
    ap.add_argument("--timeout", type=float, help="seconds per case (default 15, 120 on a sanitizer build)")
    ap.add_argument("--replay-only", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="one line per case (and its first stderr lines)")
    ap.add_argument("--families", help="only these families (F,F or F=WEIGHT,...): " + ", ".join(FAMILIES))
    ap.add_argument("--big", action="store_true", help="the big-file mode instead of the cases")
    ap.add_argument("--big-mb", type=int, default=1024)
    ap.add_argument("--big-mem-mb", type=int, default=1536)
    ap.add_argument("--big-timeout", type=int, default=600)
    args = ap.parse_args()
    args.scan = os.path.abspath(args.scan)
    if args.timeout is None:
        args.timeout = 120 if oracle.is_sanitized(args.scan) else 15
    args.workdir = os.path.abspath(args.workdir) if args.workdir else tempfile.mkdtemp(prefix="fuzz-kineto-")
    os.makedirs(args.workdir, exist_ok=True)
    args.family_weights = parse_families(args.families)
    print(f"workdir: {args.workdir}", flush=True)
    return big(args) if args.big else fuzz(args)


if __name__ == "__main__":
    sys.exit(main())
