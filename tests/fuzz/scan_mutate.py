"""Case families of fuzz_scan.py: each turns a copy of a seed scan into a hostile (or a legitimately
rewritten) scan file. A family draws its variant and parameters from the case's random stream
(`draw`) into a JSON recipe; `apply` rebuilds the file from the seed and the recipe alone, so a
recipe in the corpus rebuilds the same bytes from freshly made seeds.

Each recipe says what the readers must do with the file (docs/hdf5-layout.md, "Reading a scan
someone sent you: what is refused"):
  expect "refuse"  exit 2, one line naming the file (`rule` says which rule of the contract)
  expect "accept"  what the unmutated seed gives (its exit status; with `same_output` also its
                   stdout and summary)
  expect "any"     exit 0 or 2 (the contract does not decide)
and every case has the promises of every case (fuzz_scan.py: no crash, no hang, bounded memory, no
canary in any output, no raw control bytes, no output on failure).
"""
import os
import shutil
import socket
import stat
import subprocess
import zlib

import h5py
import numpy as np
from h5py import h5d, h5p, h5s, h5t, h5z

import scan_h5
from scan_h5 import dataset_parts, make_dataset, read_attrs, write_attrs

MARKER = b"SCANFUZZ-CANARY-51f0c2e9"  # in canary.txt and canary.h5, never in a case file
ENV_MARKER = "SCANFUZZ-ENV-CANARY-8d13b7"  # in the children's environment (read through /proc/self/environ)
PASSWD = b"root:x:0:0"
MAX_STRING = 1024  # kMaxStringBytes
MAX_RANK = 1 << 21

PAYLOADS = {
    "esc_clear": b"\x1b[2J\x1b[H",
    "osc_title": b"\x1b]0;T\x07",
    "cr_fake": b"ok\rFAKE LINE",
    "bell": b"ding\x07",
    "del_bs": b"ab\x7f\x08\x08XY",
    "c1_raw": b"\x9b31mred",
    "c1_utf8": b"\xc2\x9b31mred\xc2\x85",
    "ff": b"\xff\xfe\xfd",
    "bad_utf8": b"\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c\xbc",
    "overlong": b"\xc0\xaf\xe0\x80\xaf\xed\xa0\x80",
    "nul_mid": b"node\x00hidden",
    "newline_forge": b"x\nstraggler-scan: good.h5: forged line",
    "script": b"</script><script>alert(1)</script>",
    "html": b"<b onmouseover=alert(1)>&amp;&lt;",
    "mathtext": b"$\\sqrt{$",
    "mathtext2": b"$x^{2}_{\\alpha}$ \\$ $\\frac{a}{$",
    "printf": b"%s%s%n%x%99999999d",
    "fmt": b"{}{0}{:>999999999}{x.__class__}",
    "bidi": "abc\u202edcba\u2066".encode(),
    "unicode": "\U0001F600\u00e9\u4e2d".encode(),
    "quotes": b"\"'`\\\"\\\\",
    "json": b"\"}, \"ranks\": 999, \"x\": {\"",
    "dots": b"..." * 10,
    "empty": b"",
    "max_1024": b"M" * 1024,
    "over_1025": b"O" * 1025,
    "big_70k": b"B" * 70000,
}
PAYLOAD_WEIGHTS = {"max_1024": 0.5, "over_1025": 0.7, "big_70k": 0.7, "empty": 0.5,  # the rest 1, control bytes 2:
                   **{k: 2.0 for k in ("esc_clear", "osc_title", "cr_fake", "bell", "del_bs", "c1_raw", "c1_utf8", "ff",
                                       "bad_utf8", "newline_forge")}}

# String columns holding free text: any printable-able value is legitimate there (rule 7: made
# printable, never refused). Other string columns hold enumerations a reader may check.
FREE_TEXT = {
    "/ranks/host", "/ranks/file", "/ranks/source_version", "/ranks/source_schema", "/stragglers/host",
    "/stragglers/evidence", "/stragglers/why", "/iterations/change_points/explanation", "/waterfall/label",
    "/waterfall/iterations/label", "/what_if/change", "/kernels/top/name", "/kernels/steady/name",
    "/failures/file", "/failures/error", "/inputs/path", "/inputs/version", "/inputs/schema",
    "/collectives/communicators/mismatch", "/layout/how", "/layout/notes", "/scaling/rows/note",
    "/findings/evidence", "/compare/kernels/name", "/compare/waterfall/label", "/compare/runs/path",
    "/scaling/rows/run", "/slow_links/hosts", "/scaling/groups/hosts", "/scaling/groups/span_hosts",
}
FREE_TEXT_ATTRS = {("/clock", "not_corrected_because"), ("/", "command_line"), ("/", "version"),
                   ("/mfu/iterations", "why_not"), ("/pipeline/stages", "why_not")}
# String values the commands print (report, compare, the page, the plots): a hostile value there
# reaches a terminal, a page or a plot label, so half the string cases aim at them.
PRINTED = ["/ranks/host", "/ranks/cause", "/ranks/iteration_source", "/waterfall/label", "/what_if/change",
           "/stragglers/evidence", "/stragglers/why", "/stragglers/cause", "/kernels/top/name", "/findings/evidence",
           "/findings/finding", "/layout/notes", "/layout/how", "/compare/kernels/name", "/compare/waterfall/label",
           "/compare/changes/what", "/scaling/rows/note", "/scaling/rows/series", "/failures/error", "/failures/file",
           "/iterations/change_points/explanation", "/slow_links/hosts", "/collectives/communicators/name"]
PRINTED_ATTRS = [("/clock", "not_corrected_because"), ("/", "command_line"), ("/", "version"), ("/", "hosts"),
                 ("/mfu/iterations", "why_not"), ("/pipeline/stages", "why_not"), ("/scaling/rows", "fabric")]
RANK_COLUMNS = ["/kernels/top/rank", "/kernels/steady/rank", "/iterations/rank", "/clock/rank", "/stragglers/rank",
                "/findings/rank", "/walls/rank", "/pipeline/windows/rank", "/pipeline/flushes/rank",
                "/collectives/members", "/collectives/ops/last_rank", "/desync/missing_ranks", "/what_if/ranks",
                "/waterfall/ranks", "/failures/rank", "/iterations/change_points/culprit_ranks",
                "/compare/changes/ranks", "/capture_ended/ranks"]
INDEX_COLUMNS = ["/collectives/communicators/op_offset", "/collectives/communicators/member_offset",
                 "/collectives/communicators/arrival_offset", "/collectives/communicators/matched_ops",
                 "/collectives/communicators/size", "/collectives/communicators/mismatch_seq",
                 "/collectives/communicators/member_ops", "/collectives/ops/communicator", "/collectives/ops/seq",
                 "/collectives/ops/iteration", "/collectives/ops/type", "/waterfall/item", "/waterfall/phase",
                 "/waterfall/iterations/item", "/waterfall/iterations/phase", "/stragglers/onset_iteration",
                 "/what_if/from_iteration", "/what_if/to_iteration", "/pipeline/flushes/pipeline",
                 "/pipeline/flushes/stage", "/pipeline/stages/stage", "/pipeline/windows/flush", "/layout/tp",
                 "/layout/pp", "/layout/dp", "/mfu/phases/iterations", "/kernels/steady/steps",
                 "/kernels/top/position", "/ranks/device", "/ranks/iterations", "/ranks/kernel_count",
                 "/iterations/number", "/iterations/change_points/iteration", "/desync/seq", "/desync/group_seq",
                 "/capture_ended/seq", "/inputs/ranks", "/scaling/groups/group_size", "/scaling/groups/nodes",
                 "/scaling/rows/group_size", "/scaling/rows/nodes", "/compare/runs/from_iteration",
                 "/compare/runs/to_iteration", "/histograms/edges_ns"]
INT_EXTREMES = [0, -1, 1, -(1 << 31), (1 << 31) - 1, 1 << 31, 1 << 32, (1 << 53) + 1, 1 << 62, -(1 << 63), (1 << 63) - 1]
FLOAT_SPECIALS = ["nan", "inf", "-inf", -0.0, 1e308, -1e308, 5e-324, 1.7976931348623157e308, 9.3e18, -9.3e18, 1e-300]


def set_attr(obj, name, value):
    """obj.attrs[name] = value without h5py's temporary attribute (a random name, left in the freed
    space of a dense attribute: bytes that change from run to run)."""
    if name in obj.attrs:
        del obj.attrs[name]
    obj.attrs.create(name, value)


class Redraw(Exception):
    """The drawn variant does not apply to this seed: draw again (same stream)."""


class BuildError(Exception):
    """The case cannot be built here (a tool or facility missing): skipped."""


# ---------------------------------------------------------------- drawing helpers


def wchoice(rng, weights):
    items = list(weights.items())
    return rng.choices([k for k, _ in items], [w for _, w in items])[0]


def datasets(S, pred=lambda p, m: True):
    return sorted(p for p, m in S["datasets"].items() if pred(p, m))


def pick(rng, seq):
    if not seq:
        raise Redraw()
    return rng.choice(list(seq))


def rows_of(S, path):
    return S["datasets"][path]["shape"][0] if S["datasets"][path]["shape"] else 0


def has_peers(S, path):
    """A length change of this dataset breaks rule 5: it is a column of a declared table whose row
    count something else fixes (another column, the offsets, or /ranks and the root `ranks`)."""
    t = S["table_of"].get(path)
    if not t:
        return False
    entry = S["tables"][t[0]]
    if t[1] in ("values", "offsets"):
        return True
    return entry["row_columns"] >= 2 or (entry["group"] == "/ranks" and "ranks" in S["root_attrs"])


def draw_payload(rng, long_ok=True):
    w = {k: PAYLOAD_WEIGHTS.get(k, 1.0) for k in PAYLOADS if long_ok or len(PAYLOADS[k]) <= MAX_STRING}
    names = [wchoice(rng, w)]
    if rng.random() < 0.2:
        names.append(wchoice(rng, {k: v for k, v in w.items() if len(PAYLOADS[k]) < 100}))
    return names


def payload_bytes(names):
    return b"".join(PAYLOADS[n] for n in names)


def string_expect(path_or_attr, value_len, free):
    if value_len > MAX_STRING:
        return "refuse", "4: a string over 1,024 bytes"
    return ("accept" if free else "any"), ""


def recipe(variant, params, expect="any", rule="", same_output=False):
    r = {"variant": variant, "params": params, "expect": expect}
    if rule:
        r["rule"] = rule
    if same_output:
        r["same_output"] = True
    return r


# ---------------------------------------------------------------- structure


def d_del_dataset(rng, S):
    return recipe("del_dataset", {"path": pick(rng, datasets(S))})


def a_del(ctx, p):
    del ctx.f[p["path"]]


def d_del_group(rng, S):
    return recipe("del_group", {"path": pick(rng, [g for g in S["groups"] if g != "/"])})


def d_rename(rng, S):
    objs = datasets(S) + [g for g in S["groups"] if g != "/"]
    path = pick(rng, objs)
    parent, base = path.rsplit("/", 1)
    new = rng.choice([base + "_", base.upper(), base + " ", base + "\x1b", "old_" + base, base[:-1] or "x"])
    return recipe("rename", {"path": path, "new": f"{parent}/{new}"})


def a_rename(ctx, p):
    if p["new"] in ctx.f:
        del ctx.f[p["new"]]
    ctx.f.move(p["path"], p["new"])


def d_dup_hardlink(rng, S):
    src = pick(rng, datasets(S) + [g for g in S["groups"] if g != "/"])
    if rng.random() < 0.5:  # over another column of the same table
        dst = pick(rng, datasets(S, lambda q, m: q.rsplit("/", 1)[0] == src.rsplit("/", 1)[0] and q != src) or [src + "_dup"])
    else:
        dst = pick(rng, S["groups"]).rstrip("/") + "/" + rng.choice(["dup", "rank", "host", "ranks", "x" * 200])
    return recipe("dup_hardlink", {"src": src, "dst": dst})


def a_dup_hardlink(ctx, p):
    obj = ctx.f[p["src"]]
    if p["dst"] in ctx.f:
        del ctx.f[p["dst"]]
    ctx.f[p["dst"]] = obj


def d_group_to_dataset(rng, S):
    g = pick(rng, [g for g in S["groups"] if g != "/"])
    return recipe("group_to_dataset", {"path": g, "n": rng.choice([0, 1, 8]), "dtype": rng.choice(["<f8", "<i4", "|S8"])})


def a_group_to_dataset(ctx, p):
    del ctx.f[p["path"]]
    make_dataset(ctx.f, p["path"], np.zeros(p["n"], dtype=p["dtype"]))


def d_dataset_to_group(rng, S):
    path = pick(rng, datasets(S))
    return recipe("dataset_to_group", {"path": path, "child": rng.random() < 0.5})


def a_dataset_to_group(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    del ctx.f[p["path"]]
    ctx.f.create_group(p["path"])
    if p["child"]:  # the original, one level down
        make_dataset(ctx.f, p["path"] + "/" + p["path"].rsplit("/", 1)[1], data, tid=tid, attrs=attrs)


EXTRA_NAMES = ["extra", "\x1b[2Jname", "n\u00e9me", "a" * 1000, "b" * 70000, " ", "\x01", "ranks_offsets", "-1", "units"]


def d_extra_objects(rng, S):
    items = []
    for _ in range(rng.randint(1, 4)):
        items.append({"type": rng.choice(["group", "dataset", "attr", "big_dataset"]), "at": pick(rng, S["groups"]),
                      "name": rng.choice(EXTRA_NAMES)})
    return recipe("extra_objects", {"items": items})


def a_extra_objects(ctx, p):
    for k, it in enumerate(p["items"]):
        at = ctx.f[it["at"]]
        name = it["name"]
        if name in at or name in at.attrs:
            name = f"{name}{k}"
        if it["type"] == "group":
            at.create_group(name)
        elif it["type"] == "dataset":
            make_dataset(ctx.f, it["at"].rstrip("/") + "/" + name, np.arange(5, dtype="<i8"))
        elif it["type"] == "big_dataset":  # an unknown dataset of 1 M doubles: nobody needs to read it
            make_dataset(ctx.f, it["at"].rstrip("/") + "/" + name, np.ones(1 << 20), layout="chunked",
                         chunks=(1 << 16,), deflate=1)
        else:
            set_attr(at, name, np.int64(7))


def d_hardlink_cycle(rng, S):
    at = pick(rng, [g for g in S["groups"] if g != "/"])
    target = rng.choice(["/", at, at.rsplit("/", 1)[0] or "/"])
    return recipe("hardlink_cycle", {"at": at, "name": rng.choice(["loop", "rank", "up"]), "target": target})


def a_hardlink_cycle(ctx, p):
    g = ctx.f[p["at"]]
    if p["name"] in g:
        del g[p["name"]]
    g[p["name"]] = ctx.f[p["target"]]


def d_soft_link(rng, S):
    path = pick(rng, datasets(S) + [g for g in S["groups"] if g != "/"])
    kind = rng.choice(["other", "dangling", "self", "extra", "cycle"])
    other = pick(rng, datasets(S))
    return recipe("soft_link", {"path": path, "kind": kind, "other": other}, "refuse", "2: a soft link")


def a_soft_link(ctx, p):
    f, path = ctx.f, p["path"]
    if p["kind"] == "extra":
        f[path.rsplit("/", 1)[0] + "/soft"] = h5py.SoftLink(p["other"])
        return
    del f[path]
    if p["kind"] == "other":
        f[path] = h5py.SoftLink(p["other"])
    elif p["kind"] == "dangling":
        f[path] = h5py.SoftLink("/no/such/object")
    elif p["kind"] == "self":
        f[path] = h5py.SoftLink(path)
    else:  # two links pointing at each other
        f[path] = h5py.SoftLink(path + "_b")
        f[path + "_b"] = h5py.SoftLink(path)


def d_external_link(rng, S):
    path = pick(rng, datasets(S) + [g for g in S["groups"] if g != "/"])
    target = rng.choice(["canary.h5", "canary.h5", "case.h5", "/etc/passwd", "missing.h5", "good.h5"])
    obj = path if target != "canary.h5" or rng.random() < 0.7 else "/s64"
    return recipe("external_link", {"path": path, "file": target, "obj": obj, "replace": rng.random() < 0.8},
                  "refuse", "2: an external link")


def a_external_link(ctx, p):
    path = p["path"] if p["replace"] else p["path"].rsplit("/", 1)[0] + "/ext"
    if path in ctx.f:
        del ctx.f[path]
    ctx.f[path] = h5py.ExternalLink(p["file"], p["obj"])


def d_ud_link(rng, S):
    path = pick(rng, datasets(S) + [g for g in S["groups"] if g != "/"])
    return recipe("ud_link", {"path": path, "class": rng.choice([64, 77, 255]), "replace": rng.random() < 0.7,
                              "data": rng.choice(["/etc/passwd", "canary.h5", ""])}, "refuse", "2: a user-defined link")


def a_ud_link(ctx, p):
    path = p["path"] if p["replace"] else p["path"].rsplit("/", 1)[0] + "/ud"
    if path in ctx.f:
        del ctx.f[path]
    parent, name = path.rsplit("/", 1)
    if not scan_h5.create_ud_link(ctx.f[parent or "/"], name, p["class"], p["data"].encode()):
        raise BuildError("cannot create a user-defined link here (no libhdf5 found through h5py)")


def d_named_datatype(rng, S):
    at = pick(rng, S["groups"])
    replace = rng.random() < 0.5
    path = pick(rng, datasets(S)) if replace else at.rstrip("/") + "/type"
    return recipe("named_datatype", {"path": path})


def a_named_datatype(ctx, p):
    if p["path"] in ctx.f:
        del ctx.f[p["path"]]
    ctx.f[p["path"]] = np.dtype("<f8")


STRUCTURE = {
    "del_dataset": (3, d_del_dataset, "h5", a_del),
    "del_group": (2, d_del_group, "h5", a_del),
    "rename": (2, d_rename, "h5", a_rename),
    "dup_hardlink": (2, d_dup_hardlink, "h5", a_dup_hardlink),
    "group_to_dataset": (2, d_group_to_dataset, "h5", a_group_to_dataset),
    "dataset_to_group": (2, d_dataset_to_group, "h5", a_dataset_to_group),
    "extra_objects": (2, d_extra_objects, "h5", a_extra_objects),
    "hardlink_cycle": (2, d_hardlink_cycle, "h5", a_hardlink_cycle),
    "soft_link": (3, d_soft_link, "h5", a_soft_link),
    "external_link": (4, d_external_link, "h5", a_external_link),
    "ud_link": (2, d_ud_link, "h5", a_ud_link),
    "named_datatype": (1, d_named_datatype, "h5", a_named_datatype),
}


# ---------------------------------------------------------------- sizes


def d_column_len(rng, S):
    path = pick(rng, [p for p in S["table_of"] if S["datasets"][p]["shape"]])
    n = rows_of(S, path)
    new = pick(rng, sorted({0, max(0, n - 1), n + 1, 2 * n + 1, n + 1000} - {n}))
    expect = ("refuse", "5: a column without the table's row count") if has_peers(S, path) else ("any", "")
    return recipe("column_len", {"path": path, "n": new}, *expect)


def resized(data, n):
    if n <= data.shape[0]:
        return data[:n]
    pad = np.zeros((n - data.shape[0],) + data.shape[1:], dtype=data.dtype)
    if data.shape[0]:
        pad[...] = data[-1]
    return np.concatenate([data, pad])


def a_column_len(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    make_dataset(ctx.f, p["path"], resized(data, p["n"]), tid=tid, attrs=attrs)


HUGE = [1 << 31, (1 << 32) + 1, 1 << 40, 1 << 62]


def d_huge_dims(rng, S):
    prefer = [p for p in datasets(S) if p.startswith(("/ranks/", "/kernels/top/", "/iterations/", "/compare/", "/scaling/rows/"))]
    path = pick(rng, prefer if rng.random() < 0.7 else datasets(S))
    m = S["datasets"][path]
    n = rng.choice(HUGE)
    shape = [n] + m["shape"][1:]
    if len(m["shape"]) == 2 and rng.random() < 0.3:
        shape = [m["shape"][0], n]
    chunk = [rng.choice([1, 1 << 10, 1 << 16])] + [max(1, min(s, 92)) for s in shape[1:]]
    if len(shape) == 2 and shape[1] == n:
        chunk = [max(1, m["shape"][0]), rng.choice([1, 1 << 10])]
    return recipe("huge_dims", {"path": path, "shape": shape, "chunks": chunk, "dtype": m["dtype"],
                                "unlimited": rng.random() < 0.5}, "refuse", "3/5: storage not written, rows")


def a_huge_dims(ctx, p):
    attrs = read_attrs(ctx.f[p["path"]])
    tid = ctx.f[p["path"]].id.get_type()
    ms = [None] * len(p["shape"]) if p["unlimited"] else p["shape"]
    make_dataset(ctx.f, p["path"], np.zeros(0, dtype=p["dtype"]), tid=tid, layout="chunked", chunks=p["chunks"],
                 maxshape=ms, write=False, attrs=attrs, shape=p["shape"])


def d_fill_moderate(rng, S):
    path = pick(rng, [p for p in datasets(S) if has_peers(S, p) and S["datasets"][p]["kind"] in "iuf"])
    return recipe("fill_moderate", {"path": path, "n": rng.choice([1 << 22, 1 << 24, 1 << 26, 1 << 27, 1 << 28]),
                                    "dtype": rng.choice(["<f8", S["datasets"][path]["dtype"]])},
                  "refuse", "3/5: storage not written, rows")


def a_fill_moderate(ctx, p):
    attrs = read_attrs(ctx.f[p["path"]])
    make_dataset(ctx.f, p["path"], np.zeros(0, dtype=p["dtype"]), layout="chunked", chunks=(1 << 16,),
                 maxshape=[None], write=False, attrs=attrs, shape=[p["n"]])


def d_two_d(rng, S):
    path = pick(rng, datasets(S, lambda q, m: len(m["shape"]) == 1))
    n = rows_of(S, path)
    shape = rng.choice([[n, 1], [n, 2], [1, n], [n, 1, 1], [n, 0], [1, 1, n]])
    expect = ("refuse", "4: over 2 dimensions") if len(shape) > 2 else ("any", "")
    return recipe("two_d", {"path": path, "shape": shape}, *expect)


def a_two_d(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    shape = tuple(p["shape"])
    size = int(np.prod(shape))
    flat = np.resize(data, size) if data.size else np.zeros(size, dtype=data.dtype)
    make_dataset(ctx.f, p["path"], flat.reshape(shape), tid=tid, attrs=attrs)


def d_zero_table(rng, S):
    if not S["tables"]:
        raise Redraw()
    idx = rng.randrange(len(S["tables"]))
    return recipe("zero_table", {"columns": S["tables"][idx]["columns"], "root_ranks": rng.random() < 0.5})


def a_zero_table(ctx, p):
    for c in p["columns"]:
        if c not in ctx.f:
            continue
        data, tid, attrs = dataset_parts(ctx.f, c)
        new = np.zeros(1, dtype=data.dtype) if c.endswith("_offsets") else data[:0]
        make_dataset(ctx.f, c, new, tid=tid, attrs=attrs)
    if p["root_ranks"] and any(c.startswith("/ranks/") for c in p["columns"]) and "ranks" in ctx.f.attrs:
        set_attr(ctx.f, "ranks", np.int64(0))


def d_scalar_space(rng, S):
    path = pick(rng, datasets(S))
    return recipe("scalar_space", {"path": path, "kind": rng.choice(["scalar", "null"])})


def a_scalar_space(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    del ctx.f[p["path"]]
    if p["kind"] == "null":
        ctx.f.create_dataset(p["path"], data=h5py.Empty(data.dtype))
        write_attrs(ctx.f[p["path"]], attrs)
    else:
        v = data.reshape(-1)[:1].reshape(()) if data.size else np.zeros((), dtype=data.dtype)
        make_dataset(ctx.f, p["path"], v, tid=tid, attrs=attrs)


def d_ragged_offsets(rng, S):
    path = pick(rng, [q for q, t in S["table_of"].items() if t[1] == "offsets"])
    how = rng.choice(["decreasing", "negative", "past_end", "not_zero", "short", "long", "max", "min"])
    return recipe("ragged_offsets", {"path": path, "how": how, "big": rng.choice([1, 1000, 1 << 31, 1 << 62, (1 << 63) - 1]),
                                     "at": rng.random()}, "refuse", "5: ragged offsets")


def a_ragged_offsets(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    o = data.astype("<i8").copy()
    n = len(o)
    j = min(n - 1, int(p["at"] * n)) if n else 0
    values_len = ctx.f[p["path"][:-len("_offsets")]].shape[0] if p["path"][:-len("_offsets")] in ctx.f else 0
    how = p["how"]
    if how == "decreasing":
        if n >= 2:
            o[-1] = o[-2] - 1
        else:
            o = np.array([0, 1, 0], dtype="<i8")
    elif how == "negative":
        o[j] = -1 if p["big"] < 1000 else -p["big"]
    elif how == "past_end":
        o[-1] = values_len + p["big"] if values_len + p["big"] < (1 << 63) else (1 << 63) - 1
    elif how == "not_zero":
        o[0] = 1
        if n == 1:
            o = np.array([1], dtype="<i8")
    elif how == "short":
        o = o[:-1]
    elif how == "long":
        o = np.concatenate([o, o[-1:]])
    elif how == "max":
        o[j] = (1 << 63) - 1
    else:
        o[j] = -(1 << 63)
    make_dataset(ctx.f, p["path"], o, attrs=attrs)


def d_ranks_attr(rng, S):
    if "ranks" not in S["root_attrs"] or "/ranks/rank" not in S["datasets"]:
        raise Redraw()
    n = rows_of(S, "/ranks/rank")
    v = rng.choice([n - 1, n + 1, 0, 1 << 31, (1 << 63) - 1, -1, MAX_RANK, 2 * n])
    if v == n:
        v = n + 1
    return recipe("ranks_attr", {"value": v}, "refuse", "5: /ranks rows differ from the root attribute ranks")


def a_ranks_attr(ctx, p):
    set_attr(ctx.f, "ranks", np.int64(p["value"]))


def d_rank_values(rng, S):
    if "/ranks/rank" not in S["datasets"]:
        raise Redraw()
    n = rows_of(S, "/ranks/rank")
    how = rng.choice(["value", "value", "duplicate", "unsorted"])
    value = rng.choice([MAX_RANK, (1 << 31) - 1, -1, -(1 << 31), 999999999, MAX_RANK + 1])
    return recipe("rank_values", {"how": how, "row": rng.randrange(n), "value": value, "all": rng.random() < 0.2},
                  "refuse", "5: /ranks/rank out of [0, 2^21), unsorted or repeated")


def a_rank_values(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, "/ranks/rank")
    r = data.copy()
    n, i = len(r), p["row"]
    if p["how"] == "value":
        if p["all"]:
            r[:] = np.array(p["value"]).astype(r.dtype)
        else:
            r[i] = np.array(p["value"]).astype(r.dtype)
    elif p["how"] == "duplicate":
        r[i] = r[i - 1] if i else r[min(1, n - 1)]
        if n == 1:
            r = np.concatenate([r, r])
    else:
        j = (i + 1) % n
        r[i], r[j] = r[j].copy(), r[i].copy()
    make_dataset(ctx.f, "/ranks/rank", r, tid=tid, attrs=attrs)


def d_indices(rng, S):
    cands = [p for p in RANK_COLUMNS + INDEX_COLUMNS if p in S["datasets"] and rows_of(S, p) > 0
             and S["datasets"][p]["kind"] in "iu"]
    path = pick(rng, cands)
    return recipe("indices", {"path": path, "value": rng.choice(INT_EXTREMES), "rows": rng.choice(["first", "last", "all", "one"]),
                              "at": rng.random()})


def a_indices(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    d = data.copy()
    info = np.iinfo(d.dtype)
    v = d.dtype.type(min(max(p["value"], info.min), info.max))
    flat = d.reshape(-1)
    sel = {"first": slice(0, 1), "last": slice(-1, None), "all": slice(None)}.get(p["rows"])
    if sel is None:
        sel = slice(int(p["at"] * len(flat)), int(p["at"] * len(flat)) + 1)
    flat[sel] = v
    make_dataset(ctx.f, p["path"], d, tid=tid, attrs=attrs)


def d_matrix_dims(rng, S):
    path = pick(rng, datasets(S, lambda q, m: len(m["shape"]) == 2))
    r, c = S["datasets"][path]["shape"]
    new = rng.choice([[r, max(0, c - 1)], [r, c + 1], [r, 0], [r, 1], [r, c + 1000]])
    return recipe("matrix_dims", {"path": path, "shape": new})


def a_matrix_dims(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    r, c = p["shape"]
    new = np.zeros((r, c), dtype=data.dtype)
    k = min(c, data.shape[1])
    new[:, :k] = data[:r, :k]
    make_dataset(ctx.f, p["path"], new, tid=tid, attrs=attrs)


SIZES = {
    "column_len": (5, d_column_len, "h5", a_column_len),
    "huge_dims": (4, d_huge_dims, "h5", a_huge_dims),
    "fill_moderate": (2, d_fill_moderate, "h5", a_fill_moderate),
    "two_d": (2, d_two_d, "h5", a_two_d),
    "zero_table": (2, d_zero_table, "h5", a_zero_table),
    "scalar_space": (1, d_scalar_space, "h5", a_scalar_space),
    "ragged_offsets": (4, d_ragged_offsets, "h5", a_ragged_offsets),
    "ranks_attr": (2, d_ranks_attr, "h5", a_ranks_attr),
    "rank_values": (3, d_rank_values, "h5", a_rank_values),
    "indices": (4, d_indices, "h5", a_indices),
    "matrix_dims": (2, d_matrix_dims, "h5", a_matrix_dims),
}


# ---------------------------------------------------------------- storage kinds


def d_external(rng, S):
    strings = datasets(S, lambda q, m: m["kind"] == "S" and m["shape"] and m["shape"][0] > 0)
    path = pick(rng, strings if rng.random() < 0.75 else datasets(S, lambda q, m: m["shape"] and m["shape"][0] > 0))
    target = rng.choice(["canary.txt", "canary.txt", "/etc/passwd", "/proc/self/environ", "ext.fifo", "missing.bin"])
    return recipe("external", {"path": path, "target": target, "offset": rng.choice([0, 0, 5, 1 << 40]),
                               "width": rng.choice([0, 64, 512])}, "refuse", "2: external storage")


def a_external(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    if p["target"] == "ext.fifo":
        os.mkfifo(os.path.join(ctx.casedir, "ext.fifo"))
    dt = data.dtype
    if dt.kind == "S" and p["width"]:
        dt = np.dtype(f"S{p['width']}")
    del ctx.f[p["path"]]
    d = ctx.f.create_dataset(p["path"], shape=data.shape, dtype=dt,
                             external=[(p["target"], p["offset"], h5py.h5f.UNLIMITED)])
    write_attrs(d, attrs)


def d_vds(rng, S):
    path = pick(rng, datasets(S, lambda q, m: len(m["shape"]) == 1 and m["shape"][0] > 0))
    src = rng.choice(["canary.h5", "canary.h5", "case.h5", "missing.h5", "/etc/passwd"])
    return recipe("vds", {"path": path, "source": src, "fill": rng.choice(list(PAYLOADS)[:12])}, "refuse", "2: a virtual dataset")


def a_vds(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    n = data.shape[0]
    if data.dtype.kind == "S":
        dt, src_name, fill = np.dtype("S64"), "/s64", PAYLOADS[p["fill"]][:64]
    else:
        dt, src_name, fill = data.dtype, "/f8" if data.dtype.kind == "f" else "/i8", 0
    if p["source"] == "case.h5":  # another dataset of the same file
        same = [q for q, m in describe_shapes(ctx.f) if m == (n,) and q != p["path"] and ctx.f[q].dtype.kind == data.dtype.kind]
        src_name = same[0] if same else p["path"] + "_src"
        if not same:
            make_dataset(ctx.f, src_name, data)
        dt = ctx.f[src_name].dtype
    del ctx.f[p["path"]]
    tid = h5t.py_create(dt)
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)
    scan_h5.set_fill(dcpl, tid, np.array(fill, dtype=dt))  # not h5py's: it writes a pointer for strings
    vspace = h5s.create_simple((n,))
    src = h5s.create_simple((max(n, 4096) if p["source"] == "canary.h5" else n,))
    src.select_hyperslab((0,), (n,))
    dcpl.set_virtual(vspace, p["source"].encode(), src_name.encode(), src)
    h5d.create(ctx.f.id, p["path"].encode(), tid, vspace, dcpl=dcpl, lcpl=scan_h5.lcpl()).close()
    write_attrs(ctx.f[p["path"]], attrs)


def describe_shapes(f):
    out = []
    f.visititems(lambda name, o: out.append(("/" + name, o.shape)) if isinstance(o, h5py.Dataset) else None)
    return out


def d_chunk_missing(rng, S):
    path = pick(rng, datasets(S, lambda q, m: m["shape"] and m["shape"][0] >= 2))
    n = rows_of(S, path)
    chunk = rng.randint(1, max(1, n // 2))
    nchunks = -(-n // chunk)
    missing = sorted(rng.sample(range(nchunks), rng.randint(1, nchunks)))
    fill = rng.choice(["default", "payload", "minus"])
    return recipe("chunk_missing", {"path": path, "chunk": chunk, "missing": missing, "fill": fill,
                                    "payload": rng.choice(list(PAYLOADS)[:14])}, "refuse", "3: a chunk missing (fill values)")


def a_chunk_missing(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    fill = None
    if p["fill"] == "payload" and data.dtype.kind == "S":
        fill = PAYLOADS[p["payload"]][:data.dtype.itemsize]
    elif p["fill"] == "minus" and data.dtype.kind in "if":
        fill = -1
    chunks = (p["chunk"],) + tuple(data.shape[1:])
    d = make_dataset(ctx.f, p["path"], data, tid=tid, layout="chunked", chunks=chunks, fill=fill, write=False, attrs=attrs)
    n, c = data.shape[0], p["chunk"]
    for k in range(-(-n // c)):
        if k not in p["missing"]:
            d[k * c:(k + 1) * c] = data[k * c:(k + 1) * c]


def d_unallocated(rng, S):
    path = pick(rng, datasets(S, lambda q, m: m["shape"] and m["shape"][0] > 0))
    return recipe("unallocated", {"path": path}, "refuse", "3: storage not allocated")


def a_unallocated(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    make_dataset(ctx.f, p["path"], data, tid=tid, write=False, attrs=attrs)


_ZCHUNK = {}


def zero_chunk(nbytes, level, times):
    key = (nbytes, level, times)
    if key not in _ZCHUNK:
        z = bytes(nbytes)
        for _ in range(times):
            z = zlib.compress(z, level)
        _ZCHUNK[key] = z
    return _ZCHUNK[key]


def d_gzip_bomb(rng, S):
    path = pick(rng, [p for p in datasets(S) if has_peers(S, p) and len(S["datasets"][p]["shape"]) == 1])
    kind = rng.choice(["f8", "i8", "u1", "s1024"])
    n = {"f8": 1 << 27, "i8": 1 << 27, "u1": 1 << 30, "s1024": 1 << 20}[kind]
    return recipe("gzip_bomb", {"path": path, "kind": kind, "n": n}, "refuse", "5/6: rows, memory bound")


def a_bomb(ctx, p, times):
    attrs = read_attrs(ctx.f[p["path"]])
    del ctx.f[p["path"]]
    dt = {"f8": np.dtype("<f8"), "i8": np.dtype("<i8"), "u1": np.dtype("u1"), "s1024": np.dtype("S1024")}[p["kind"]]
    chunk_elems = (8 << 20) // dt.itemsize
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)
    dcpl.set_chunk((chunk_elems,))
    for _ in range(times):
        dcpl.set_deflate(9)
    space = h5s.create_simple((p["n"],), (p["n"],))
    ds = h5d.create(ctx.f.id, p["path"].encode(), h5t.py_create(dt), space, dcpl=dcpl, lcpl=scan_h5.lcpl())
    z = zero_chunk(8 << 20, 9, times)
    for k in range(p["n"] // chunk_elems):
        ds.write_direct_chunk((k * chunk_elems,), z, 0)
    ds.close()
    write_attrs(ctx.f[p["path"]], attrs)


def a_gzip_bomb(ctx, p):
    a_bomb(ctx, p, 1)


def d_double_deflate(rng, S):
    path = pick(rng, datasets(S, lambda q, m: len(m["shape"]) == 1))
    kind = rng.choice(["f8", "i8", "s1024"])
    n = rng.choice([1 << 27, 1 << 28, 1 << 30]) // (128 if kind == "s1024" else 1)
    return recipe("double_deflate", {"path": path, "kind": kind, "n": n}, "refuse", "3: expands over 1,100 times")


def a_double_deflate(ctx, p):
    a_bomb(ctx, p, 2)


def d_bad_filter(rng, S):
    path = pick(rng, datasets(S, lambda q, m: m["shape"] and m["shape"][0] > 0 and len(m["shape"]) == 1))
    kinds = ["lzf", "unregistered", "unregistered", "nbit", "scaleoffset"]
    if h5z.filter_avail(h5z.FILTER_SZIP):
        kinds.append("szip")
    return recipe("bad_filter", {"path": path, "filter": rng.choice(kinds),
                                 "id": rng.choice([256, 307, 32001, 32004, 32008, 32015, 60000])},
                  "refuse", "2: a filter other than deflate, shuffle, fletcher32")


def a_bad_filter(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    f, path, kind = ctx.f, p["path"], p["filter"]
    chunks = (max(1, min(len(data), 64)),)
    if kind == "unregistered":
        make_dataset(f, path, data, tid=tid, layout="chunked", chunks=chunks, attrs=attrs,
                     filters=[(p["id"], h5z.FLAG_OPTIONAL, (1, 2))])
        return
    del f[path]
    if kind == "lzf":
        d = f.create_dataset(path, data=data, chunks=chunks, compression="lzf")
    elif kind == "szip":
        d = f.create_dataset(path, shape=data.shape, dtype=data.dtype, chunks=(64,), maxshape=(None,),
                             compression="szip", compression_opts=("nn", 8))
        d[...] = data
    elif kind == "nbit":
        if data.dtype.kind not in "iuf":
            data = np.arange(len(data), dtype="<i4")
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk(chunks)
        dcpl.set_nbit()
        h5d.create(f.id, path.encode(), h5t.py_create(data.dtype), h5s.create_simple(data.shape), dcpl=dcpl,
                   lcpl=scan_h5.lcpl()).write(h5s.ALL, h5s.ALL, np.ascontiguousarray(data))
        d = f[path]
    else:
        if data.dtype.kind not in "iuf":
            data = np.arange(len(data), dtype="<i4")
        d = f.create_dataset(path, data=data, chunks=chunks, scaleoffset=(0 if data.dtype.kind in "iu" else 3))
    write_attrs(d, attrs)


STORAGE = {
    "external": (6, d_external, "h5", a_external),
    "vds": (4, d_vds, "h5", a_vds),
    "chunk_missing": (3, d_chunk_missing, "h5", a_chunk_missing),
    "unallocated": (2, d_unallocated, "h5", a_unallocated),
    "gzip_bomb": (2, d_gzip_bomb, "h5", a_gzip_bomb),
    "double_deflate": (2, d_double_deflate, "h5", a_double_deflate),
    "bad_filter": (3, d_bad_filter, "h5", a_bad_filter),
}


# ---------------------------------------------------------------- strings


def string_columns(S, nonempty=True):
    return datasets(S, lambda q, m: m["kind"] == "S" and len(m["shape"]) == 1 and (m["shape"][0] > 0 or not nonempty))


def d_ds_value(rng, S):
    printed = [p for p in PRINTED if p in string_columns(S)]
    path = pick(rng, printed if printed and rng.random() < 0.5 else string_columns(S))
    names = draw_payload(rng)
    mode = rng.choice(["replace", "append", "prefix"])
    n = rows_of(S, path)
    rows = sorted(set(rng.randrange(n) for _ in range(rng.randint(1, 3)))) if rng.random() < 0.7 else list(range(n))
    value_len = len(payload_bytes(names)) + (0 if mode == "replace" else S["datasets"][path]["itemsize"])
    expect, rule = string_expect(path, value_len, path in FREE_TEXT)
    return recipe("ds_value", {"path": path, "payload": names, "mode": mode, "rows": rows}, expect, rule)


def new_value(old, pay, mode):
    old = bytes(old).rstrip(b"\0")
    return pay if mode == "replace" else old + pay if mode == "append" else pay + old


def a_ds_value(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    pay = payload_bytes(p["payload"])
    vals = [bytes(v) for v in data]
    for r in p["rows"]:
        vals[r] = new_value(vals[r], pay, p["mode"])
    width = max(1, max(len(v) for v in vals))
    make_dataset(ctx.f, p["path"], np.array(vals, dtype=f"S{width}"), attrs=attrs)


def d_host_rename(rng, S):
    """One host renamed everywhere it appears (/ranks/host, /stragglers/host, the root `hosts`,
    ragged host lists): a consistent file with a hostile host name (P_plot_mathtext_host)."""
    if "/ranks/host" not in S["datasets"]:
        raise Redraw()
    names = draw_payload(rng, long_ok=rng.random() < 0.15)
    expect, rule = string_expect("/ranks/host", len(payload_bytes(names)), True)
    return recipe("host_rename", {"payload": names, "which": rng.random()}, expect, rule)


def a_host_rename(ctx, p):
    f = ctx.f
    hosts = sorted(set(bytes(h).rstrip(b"\0") for h in f["/ranks/host"][()]))
    if not hosts:
        return
    old = hosts[min(len(hosts) - 1, int(p["which"] * len(hosts)))]
    new = payload_bytes(p["payload"])
    for path, _ in describe_shapes(f):
        d = f[path]
        if d.dtype.kind != "S" or d.ndim != 1 or not d.shape[0]:
            continue
        vals = [bytes(v).rstrip(b"\0") for v in d[()]]
        if old not in vals:
            continue
        vals = [new if v == old else v for v in vals]
        attrs = read_attrs(d)
        make_dataset(f, path, np.array(vals, dtype=f"S{max(1, max(len(v) for v in vals))}"), attrs=attrs)
    if "hosts" in f.attrs:
        hs = [new if bytes(h).rstrip(b"\0") == old else bytes(h) for h in np.atleast_1d(f.attrs["hosts"])]
        set_attr(f, "hosts", np.array(hs, dtype=f"S{max(1, max(len(h) for h in hs))}"))


def string_attrs(S):
    out = []
    for obj, attrs in S["attrs"].items():
        for name, m in attrs.items():
            if m["kind"] == "S":
                out.append((obj, name))
    return sorted(out)


def d_attr_value(rng, S):
    cands = string_attrs(S)
    prefer = [c for c in PRINTED_ATTRS if c in cands]
    obj, name = pick(rng, prefer if prefer and rng.random() < 0.6 else cands)
    names = draw_payload(rng)
    free = (obj, name) in FREE_TEXT_ATTRS or name == "description"
    expect, rule = string_expect(name, len(payload_bytes(names)), free)
    array = rng.random() < 0.2
    if array and expect == "accept":  # a list where the writer writes one string: read or refused
        expect = "any"
    return recipe("attr_value", {"obj": obj, "name": name, "payload": names, "array": array}, expect, rule)


def a_attr_value(ctx, p):
    o = ctx.f[p["obj"]]
    pay = payload_bytes(p["payload"])
    old = np.asarray(o.attrs[p["name"]])
    dt = f"S{max(1, len(pay))}"
    if old.ndim == 1 or p["array"]:
        set_attr(o, p["name"], np.array([pay] * max(1, old.size if old.ndim else 2), dtype=dt))
    else:
        set_attr(o, p["name"], np.array(pay, dtype=dt))


def d_big_fixed(rng, S):
    path = pick(rng, string_columns(S, nonempty=False))
    size = rng.choice([1 << 24, 1 << 27, (1 << 31) - 1, 1 << 31, (1 << 32) - 1])
    n = rng.choice([rows_of(S, path), 1, rows_of(S, path) + 1])
    return recipe("big_fixed", {"path": path, "size": size, "n": max(1, n)}, "refuse", "4: a string over 1,024 bytes")


def a_big_string(ctx, p):
    attrs = read_attrs(ctx.f[p["path"]])
    del ctx.f[p["path"]]
    tid = h5t.C_S1.copy()
    tid.set_size(p["size"])
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk((1,))
    dcpl.set_obj_track_times(False)
    sid = h5s.create_simple((p["n"],), (h5s.UNLIMITED,))
    h5d.create(ctx.f.id, p["path"].encode(), tid, sid, dcpl=dcpl, lcpl=scan_h5.lcpl()).close()
    write_attrs(ctx.f[p["path"]], attrs)


def d_overflow(rng, S):
    path = pick(rng, string_columns(S, nonempty=False))
    size, n = rng.choice([(1 << 24, 1 << 40), (1 << 31, 1 << 33), ((1 << 32) - 1, (1 << 32) + 1), (1 << 20, 1 << 44), (4096, 1 << 52)])
    return recipe("overflow", {"path": path, "size": size, "n": n}, "refuse", "4/5: count x size over 2^64")


def d_vlen(rng, S):
    path = pick(rng, string_columns(S, nonempty=False))
    return recipe("vlen", {"path": path, "encoding": rng.choice(["ascii", "utf-8"]),
                           "payload": draw_payload(rng) if rng.random() < 0.4 else []},
                  "refuse", "4: a variable-length string")


def a_vlen(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    vals = [bytes(v).rstrip(b"\0") + payload_bytes(p["payload"]) for v in data]
    del ctx.f[p["path"]]
    dt = h5py.string_dtype(p["encoding"])
    d = ctx.f.create_dataset(p["path"], shape=(len(vals),), dtype=dt)
    if vals:
        d[:] = np.array([v.decode("utf-8", "replace") if p["encoding"] == "utf-8" else v for v in vals], dtype=object)
    write_attrs(d, attrs)


def d_vlen_attr(rng, S):
    obj, name = pick(rng, string_attrs(S))
    return recipe("vlen_attr", {"obj": obj, "name": name, "payload": draw_payload(rng, long_ok=False)},
                  "refuse", "4: a variable-length string attribute")


def a_vlen_attr(ctx, p):
    o = ctx.f[p["obj"]]
    old = np.atleast_1d(np.asarray(o.attrs[p["name"]]))
    pay = payload_bytes(p["payload"]).decode("utf-8", "replace")
    vals = [bytes(v).decode("ascii", "replace") + pay for v in old]
    dt = h5py.string_dtype("utf-8")
    scalar = np.asarray(o.attrs[p["name"]]).ndim == 0
    del o.attrs[p["name"]]
    if scalar:
        o.attrs.create(p["name"], vals[0], dtype=dt)
    else:
        o.attrs.create(p["name"], np.array(vals, dtype=object), dtype=dt)


def d_utf8_cset(rng, S):
    path = pick(rng, string_columns(S))
    names = [rng.choice(["bad_utf8", "overlong", "c1_utf8", "bidi", "unicode", "ff"])]
    expect, rule = string_expect(path, len(payload_bytes(names)) + S["datasets"][path]["itemsize"], path in FREE_TEXT)
    return recipe("utf8_cset", {"path": path, "payload": names}, expect, rule)


def a_utf8_cset(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    vals = [bytes(v).rstrip(b"\0") for v in data]
    vals[0] = vals[0] + payload_bytes(p["payload"])
    width = max(1, max(len(v) for v in vals))
    t = h5t.C_S1.copy()
    t.set_size(width)
    t.set_strpad(h5t.STR_NULLPAD)
    t.set_cset(h5t.CSET_UTF8)
    make_dataset(ctx.f, p["path"], np.array(vals, dtype=f"S{width}"), tid=t, attrs=attrs)


STRINGS = {
    "ds_value": (8, d_ds_value, "h5", a_ds_value),
    "host_rename": (4, d_host_rename, "h5", a_host_rename),
    "attr_value": (6, d_attr_value, "h5", a_attr_value),
    "big_fixed": (2, d_big_fixed, "h5", a_big_string),
    "overflow": (2, d_overflow, "h5", a_big_string),
    "vlen": (2, d_vlen, "h5", a_vlen),
    "vlen_attr": (1, d_vlen_attr, "h5", a_vlen_attr),
    "utf8_cset": (2, d_utf8_cset, "h5", a_utf8_cset),
}


# ---------------------------------------------------------------- dataset types and values


def d_retype(rng, S):
    path = pick(rng, datasets(S, lambda q, m: len(m["shape"]) >= 1))
    k = S["datasets"][path]["kind"]
    choices = {"S": ["number", "float", "enum", "compound", "opaque", "array", "reference", "vlen_seq"],
               "i": ["string", "float", "narrow", "widen", "big_endian", "unsigned", "half", "long_double", "enum", "compound", "opaque", "array", "vlen_seq", "reference"],
               "u": ["string", "float", "widen", "big_endian", "signed", "enum", "compound", "long_double"],
               "f": ["string", "int", "float32", "half", "big_endian", "long_double", "compound", "opaque", "array"]}.get(k, ["string"])
    to = rng.choice(choices)
    refuse = {"long_double": "4: a number over 8 bytes", "compound": "4: not a number or a string",
              "opaque": "4: not a number or a string", "array": "4: not a number or a string",
              "reference": "4: not a number or a string", "vlen_seq": "4: a variable-length type"}
    if to in refuse:
        return recipe("retype", {"path": path, "to": to}, "refuse", refuse[to])
    return recipe("retype", {"path": path, "to": to})


def a_retype(ctx, p):
    with np.errstate(all="ignore"):
        _retype(ctx, p)


def _retype(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    to, f, path = p["to"], ctx.f, p["path"]
    shape = data.shape
    if data.dtype.kind == "S":
        num = np.array([_num(v) for v in data.reshape(-1)], dtype="<f8").reshape(shape)
    else:
        num = data
    if to == "string":
        new = np.array([str(v).encode() for v in data.reshape(-1)], dtype="S32").reshape(shape) if data.size else np.zeros(shape, "S1")
    elif to in ("number", "int"):
        new = np.nan_to_num(num.astype("<f8")).clip(-9e18, 9e18).astype("<i8")
    elif to == "float":
        new = num.astype("<f8")
    elif to == "float32":
        new = num.astype("<f4")
    elif to == "half":
        new = num.astype("<f2")
    elif to == "narrow":
        new = num.astype("<i2")
    elif to == "widen":
        new = num.astype("<i8") if num.dtype.kind == "i" else num.astype("<u8")
    elif to == "big_endian":
        new = num.astype(num.dtype.newbyteorder(">"))
    elif to == "unsigned":
        new = num.astype("<u4")
    elif to == "signed":
        new = num.astype("<i8")
    elif to == "long_double":
        new = num.astype(np.longdouble)
    elif to == "enum":
        new = (np.asarray(num) != 0) if data.size else np.zeros(shape, bool)
    elif to == "compound":
        new = np.zeros(shape, dtype=[("v", "<f8"), ("x", "<i4")])
        if data.size:
            new["v"] = np.nan_to_num(num.astype("<f8"))
    elif to == "opaque":
        new = np.zeros(shape, dtype="V8")
    elif to == "array":
        new = np.zeros(shape, dtype=("<i4", (2,)))
    elif to == "reference":
        del f[path]
        d = f.create_dataset(path, shape=shape, dtype=h5py.ref_dtype)
        if data.size:
            refs = np.empty(shape, dtype=h5py.ref_dtype)
            refs[...] = f["/"].ref
            d[...] = refs
        write_attrs(d, attrs)
        return
    else:  # vlen_seq
        del f[path]
        d = f.create_dataset(path, shape=shape, dtype=h5py.vlen_dtype(np.dtype("<i4")))
        for i in range(min(len(d), 16) if d.ndim == 1 else 0):
            d[i] = np.arange(i % 3, dtype="<i4")
        write_attrs(d, attrs)
        return
    if to == "enum":
        del f[path]
        d = f.create_dataset(path, data=new)
        write_attrs(d, attrs)
        return
    make_dataset(f, path, np.asarray(new), attrs=attrs)


def _num(v):
    try:
        return float(bytes(v).rstrip(b"\0") or 0)
    except ValueError:
        return float(len(v))


def d_float_special(rng, S):
    path = pick(rng, datasets(S, lambda q, m: m["kind"] == "f" and m["shape"] and m["shape"][0] > 0))
    return recipe("float_special", {"path": path, "value": rng.choice(FLOAT_SPECIALS),
                                    "rows": rng.choice(["first", "last", "all", "one"]), "at": rng.random()})


def a_float_special(ctx, p):
    data, tid, attrs = dataset_parts(ctx.f, p["path"])
    d = data.copy()
    flat = d.reshape(-1)
    v = float(p["value"])
    sel = {"first": slice(0, 1), "last": slice(-1, None), "all": slice(None)}.get(p["rows"])
    if sel is None:
        sel = slice(int(p["at"] * len(flat)), int(p["at"] * len(flat)) + 1)
    flat[sel] = v
    make_dataset(ctx.f, p["path"], d, tid=tid, attrs=attrs)


def d_int_extreme(rng, S):
    path = pick(rng, datasets(S, lambda q, m: m["kind"] in "iu" and m["shape"] and m["shape"][0] > 0
                              and q not in RANK_COLUMNS and q not in INDEX_COLUMNS and q != "/ranks/rank"))
    return recipe("int_extreme", {"path": path, "value": rng.choice(INT_EXTREMES), "rows": rng.choice(["first", "last", "all", "one"]),
                                  "at": rng.random()})


TYPES = {
    "retype": (10, d_retype, "h5", a_retype),
}
VALUES = {
    "float_special": (5, d_float_special, "h5", a_float_special),
    "int_extreme": (4, d_int_extreme, "h5", a_indices),
    "indices": (4, d_indices, "h5", a_indices),
}


# ---------------------------------------------------------------- attributes


def all_attrs(S):
    return sorted((o, n) for o, attrs in S["attrs"].items() for n in attrs)


ROOT_FAVOURED = ["format_version", "ranks", "tool", "hosts", "version", "command_line", "ranks_failed", "runs"]


def pick_attr(rng, S):
    root = [("/", n) for n in ROOT_FAVOURED if n in S["root_attrs"]]
    return pick(rng, root if root and rng.random() < 0.5 else all_attrs(S))


def d_attr_type(rng, S):
    obj, name = pick_attr(rng, S)
    to = rng.choice(["string", "float", "array2", "array0", "null", "int_for_string", "vlen_string", "compound", "negative", "bool"])
    if to in ("vlen_string", "compound"):
        return recipe("attr_type", {"obj": obj, "name": name, "to": to}, "refuse",
                      "4: " + ("a variable-length string" if to == "vlen_string" else "not a number or a string"))
    return recipe("attr_type", {"obj": obj, "name": name, "to": to})


def a_attr_type(ctx, p):
    o = ctx.f[p["obj"]]
    old = np.asarray(o.attrs[p["name"]])
    to, name = p["to"], p["name"]
    del o.attrs[name]
    scalar = old.reshape(-1)[0] if old.size else 0
    if to == "string":
        set_attr(o, name, np.bytes_(str(scalar.decode() if isinstance(scalar, bytes) else scalar).encode()))
    elif to == "float":
        set_attr(o, name, np.float64(_num(scalar) if isinstance(scalar, bytes) else float(scalar) + 0.5))
    elif to == "array2":
        set_attr(o, name, np.array([scalar, scalar]))
    elif to == "array0":
        o.attrs.create(name, np.zeros(0, dtype=old.dtype))
    elif to == "null":
        set_attr(o, name, h5py.Empty(old.dtype))
    elif to == "int_for_string":
        set_attr(o, name, np.int64(7))
    elif to == "vlen_string":
        o.attrs.create(name, str(scalar), dtype=h5py.string_dtype())
    elif to == "compound":
        set_attr(o, name, np.zeros((), dtype=[("a", "<i8"), ("b", "<f8")]))
    elif to == "negative":
        set_attr(o, name, np.int64(-1))
    else:
        set_attr(o, name, np.bool_(True))


def d_attr_missing(rng, S):
    obj, name = pick_attr(rng, S)
    if obj == "/" and name == "format_version":
        return recipe("attr_missing", {"obj": obj, "name": name}, "refuse", "format_version: a reader refuses another")
    return recipe("attr_missing", {"obj": obj, "name": name})


def a_attr_missing(ctx, p):
    del ctx.f[p["obj"]].attrs[p["name"]]


def d_attr_huge(rng, S):
    obj = rng.choice(["/", "/", pick(rng, S["groups"]), pick(rng, datasets(S))])
    kind = rng.choice(["hosts_list", "long_string", "numbers", "many"])
    name = "hosts" if kind == "hosts_list" and obj == "/" else rng.choice(["hosts", "description", "huge"])
    if kind == "long_string":
        return recipe("attr_huge", {"obj": obj, "name": name, "kind": kind, "n": rng.choice([70000, 1 << 20])},
                      "refuse", "4: a string over 1,024 bytes")
    return recipe("attr_huge", {"obj": obj, "name": name, "kind": kind, "n": rng.choice([3000, 20000, 100000])})


def a_attr_huge(ctx, p):
    o = ctx.f[p["obj"]]
    n = p["n"]
    if p["kind"] == "hosts_list":
        set_attr(o, p["name"], np.array([b"node-%06d" % i for i in range(n)]))
    elif p["kind"] == "long_string":
        set_attr(o, p["name"], np.bytes_(b"L" * n))
    elif p["kind"] == "numbers":
        set_attr(o, p["name"], np.arange(n, dtype="<f8"))
    else:
        for i in range(min(n, 3000)):
            set_attr(o, f"a{i:05d}", np.int64(i))


def d_format_version(rng, S):
    if "format_version" not in S["root_attrs"]:
        raise Redraw()
    v = rng.choice([0, 2, -1, 1 << 31, (1 << 63) - 1, -(1 << 63), 100])
    return recipe("format_version", {"value": v}, "refuse", "format_version: a reader refuses another")


def a_format_version(ctx, p):
    set_attr(ctx.f, "format_version", np.int64(p["value"]))


def d_tool(rng, S):
    names = rng.choice([["empty"], ["esc_clear"], ["dots"], ["script"]]) if rng.random() < 0.4 else []
    value = rng.choice(["h5py", "straggler-scan ", "STRAGGLER-SCAN", "straggler-scan\0x", "nsys"])
    return recipe("tool", {"value": value, "payload": names})


def a_tool(ctx, p):
    set_attr(ctx.f, "tool", np.bytes_(p["value"].encode() + payload_bytes(p["payload"])))


def d_attr_move(rng, S):
    obj, name = pick_attr(rng, S)
    to = pick(rng, [g for g in S["groups"] if g != obj] + datasets(S)[:20])
    keep = rng.random() < 0.3
    if obj == "/" and name == "format_version" and not keep:
        return recipe("attr_move", {"obj": obj, "name": name, "to": to, "keep": keep}, "refuse",
                      "format_version: a reader refuses another")
    return recipe("attr_move", {"obj": obj, "name": name, "to": to, "keep": keep})


def a_attr_move(ctx, p):
    src, dst = ctx.f[p["obj"]], ctx.f[p["to"]]
    saved = [a for a in read_attrs(src) if a[0] == p["name"]]
    if p["name"] in dst.attrs:
        del dst.attrs[p["name"]]
    write_attrs(dst, saved)
    if not p["keep"]:
        del src.attrs[p["name"]]


ATTRIBUTES = {
    "attr_type": (5, d_attr_type, "h5", a_attr_type),
    "attr_missing": (4, d_attr_missing, "h5", a_attr_missing),
    "attr_huge": (3, d_attr_huge, "h5", a_attr_huge),
    "format_version": (3, d_format_version, "h5", a_format_version),
    "tool": (2, d_tool, "h5", a_tool),
    "attr_move": (2, d_attr_move, "h5", a_attr_move),
}


# ---------------------------------------------------------------- raw bytes

SIGNATURES = [b"OHDR", b"OCHK", b"BTHD", b"BTIN", b"BTLF", b"FRHP", b"FHDB", b"FHIB", b"FSHD", b"FSSE", b"TREE",
              b"HEAP", b"SNOD", b"GCOL", b"\x89HDF"]


def meta_offsets(S):
    return S.get("meta_offsets", [])


def d_flip(rng, S):
    size = S["size"]
    flips = []
    where = rng.choice(["any", "head", "meta", "meta"])
    for _ in range(rng.randint(1, 8)):
        if where == "any":
            off = rng.randrange(size)
        elif where == "head":
            off = rng.randrange(min(size, 4096))
        else:
            off = min(size - 1, pick(rng, meta_offsets(S) or [0]) + rng.randrange(64))
        flips.append([off, rng.randrange(8)])
    return recipe("flip", {"flips": flips, "fix_checksums": rng.random() < 0.5})


def a_flip(ctx, p):
    with open(ctx.path, "rb") as f:
        buf = bytearray(f.read())
    headers = scan_h5.ohdr_headers(buf) if p.get("fix_checksums") else []
    for off, bit in p["flips"]:
        if off < len(buf):
            buf[off] ^= 1 << bit
    for start, _, end in headers:  # the header as it was: its checksum made right again
        if any(start + 6 <= off < end for off, _ in p["flips"]):
            scan_h5.fix_checksum(buf, start, end)
    with open(ctx.path, "wb") as f:
        f.write(buf)


def d_truncate(rng, S):
    size = S["size"]
    n = rng.choice([0, 8, 48, 512, 2048, rng.randrange(size), size - rng.randint(1, 4096), size // 2])
    return recipe("truncate", {"length": max(0, n)})


def a_truncate(ctx, p):
    with open(ctx.path, "r+b") as f:
        f.truncate(p["length"])


def d_zero_range(rng, S):
    size = S["size"]
    start = pick(rng, meta_offsets(S)) if rng.random() < 0.6 and meta_offsets(S) else rng.randrange(size)
    return recipe("zero_range", {"start": start, "length": rng.choice([4, 16, 64, 512, 4096]),
                                 "byte": rng.choice([0, 0, 0xFF])})


def a_zero_range(ctx, p):
    with open(ctx.path, "r+b") as f:
        f.seek(p["start"])
        left = max(0, os.path.getsize(ctx.path) - p["start"])
        f.write(bytes([p["byte"]]) * min(p["length"], left))


def d_copy_range(rng, S):
    size = S["size"]
    src = pick(rng, meta_offsets(S) or [0])
    dst = pick(rng, meta_offsets(S) or [0]) if rng.random() < 0.6 else rng.randrange(size)
    return recipe("copy_range", {"src": src, "dst": dst, "length": rng.choice([16, 64, 256, 4096])})


def a_copy_range(ctx, p):
    with open(ctx.path, "rb") as f:
        buf = bytearray(f.read())
    chunk = buf[p["src"]:p["src"] + p["length"]]
    buf[p["dst"]:p["dst"] + len(chunk)] = chunk
    with open(ctx.path, "wb") as f:
        f.write(buf)


def d_superblock(rng, S):
    field = rng.choice(["eof", "root", "base", "sizes", "version"])
    value = rng.choice([0, 1, 48, S["size"] + 1, S["size"] * 2, 1 << 40, (1 << 63) - 1, (1 << 64) - 1])
    return recipe("superblock", {"field": field, "value": value})


def a_superblock(ctx, p):
    with open(ctx.path, "rb") as f:
        buf = bytearray(f.read())
    if buf[:8] != b"\x89HDF\r\n\x1a\n" or buf[8] not in (2, 3):
        raise BuildError("not a version 2/3 superblock at 0")
    offs = {"base": 12, "eof": 28, "root": 36}
    if p["field"] in offs:
        o = offs[p["field"]]
        buf[o:o + 8] = (p["value"] & ((1 << 64) - 1)).to_bytes(8, "little")
    elif p["field"] == "sizes":
        buf[9] = p["value"] & 0xFF or 16
    else:
        buf[8] = p["value"] & 0xFF
    buf[44:48] = scan_h5.lookup3(buf[0:44]).to_bytes(4, "little")
    with open(ctx.path, "wb") as f:
        f.write(buf)


BYTES = {
    "flip": (6, d_flip, "raw", a_flip),
    "truncate": (3, d_truncate, "raw", a_truncate),
    "zero_range": (3, d_zero_range, "raw", a_zero_range),
    "copy_range": (2, d_copy_range, "raw", a_copy_range),
    "superblock": (2, d_superblock, "raw", a_superblock),
}


# ---------------------------------------------------------------- the path itself


def d_path(rng, S):
    kind = wchoice(rng, {"fifo": 3, "directory": 1, "dir_with_scan": 1, "chardev_null": 1, "chardev_zero": 1,
                         "socket": 1, "symlink_fifo": 2, "symlink_dir": 1, "symlink_loop": 1, "dangling": 1,
                         "empty": 1, "symlink_regular": 2, "symlink_chardev": 1})
    if kind == "symlink_regular":
        return recipe(kind, {}, "accept", same_output=True)
    return recipe(kind, {}, "refuse", "1: not a regular file")


def a_path(ctx, p, kind):
    case = ctx.path
    os.remove(case)
    d = ctx.casedir
    if kind == "fifo":
        os.mkfifo(case)
    elif kind == "directory":
        os.mkdir(case)
    elif kind == "dir_with_scan":
        os.mkdir(case)
        shutil.copyfile(ctx.seed_path, os.path.join(case, "scan.h5"))
    elif kind in ("chardev_null", "chardev_zero", "symlink_chardev"):
        target = case if kind != "symlink_chardev" else os.path.join(d, "dev.h5")
        try:
            os.mknod(target, 0o600 | stat.S_IFCHR, os.makedev(1, 3 if kind == "chardev_null" else 5))
        except OSError as e:
            raise BuildError(f"mknod: {e.strerror}")
        if kind == "symlink_chardev":
            os.symlink("dev.h5", case)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        try:
            s.bind(case)
        except OSError as e:
            raise BuildError(f"socket: {e.strerror}")
        finally:
            s.close()
    elif kind == "symlink_fifo":
        os.mkfifo(os.path.join(d, "pipe.h5"))
        os.symlink("pipe.h5", case)
    elif kind == "symlink_dir":
        os.mkdir(os.path.join(d, "folder.h5"))
        os.symlink("folder.h5", case)
    elif kind == "symlink_loop":
        os.symlink("case.h5", case)
    elif kind == "dangling":
        os.symlink("no-such-scan.h5", case)
    elif kind == "empty":
        open(case, "wb").close()
    elif kind == "symlink_regular":
        os.mkdir(os.path.join(d, "real"))
        shutil.copyfile(ctx.seed_path, os.path.join(d, "real", "scan.h5"))
        os.symlink("real/scan.h5", case)


PATH_KINDS = ["fifo", "directory", "dir_with_scan", "chardev_null", "chardev_zero", "socket", "symlink_fifo", "symlink_dir",
              "symlink_loop", "dangling", "empty", "symlink_regular", "symlink_chardev"]
PATH = {k: (0, None, "path", (lambda kk: lambda ctx, p: a_path(ctx, p, kk))(k)) for k in PATH_KINDS}
PATH["_draw"] = (1, d_path, "path", None)


# ---------------------------------------------------------------- legitimate rewrites (must read as before)


def legit(variant, params):
    return recipe(variant, params, "accept", same_output=True)


def d_identity(rng, S):
    return legit("identity", {})


def pick_subset(rng, seq):
    seq = list(seq)
    if rng.random() < 0.6:
        return seq
    return sorted(rng.sample(seq, max(1, len(seq) // rng.choice([2, 4, 8])))) if seq else seq


def d_gzip(rng, S):
    return legit("gzip", {"paths": pick_subset(rng, datasets(S)), "level": rng.randint(1, 9), "shuffle": rng.random() < 0.5,
                          "fletcher32": rng.random() < 0.3, "chunk": rng.choice(["whole", "small", "big"]), "r": rng.random()})


def chunk_for(shape, how, r):
    if not shape:
        return None
    n = shape[0]
    first = {"whole": max(1, n), "small": max(1, int(r * n) or 1), "big": 2 * n + 1}[how]
    return (first,) + tuple(max(1, s) for s in shape[1:])


def a_gzip(ctx, p):
    for path in p["paths"]:
        if path not in ctx.f or not isinstance(ctx.f[path], h5py.Dataset) or ctx.f[path].ndim == 0:
            continue
        data, tid, attrs = dataset_parts(ctx.f, path)
        make_dataset(ctx.f, path, data, tid=tid, layout="chunked", chunks=chunk_for(data.shape, p["chunk"], p["r"]),
                     deflate=p["level"] if p.get("level") else None, shuffle=p.get("shuffle", False),
                     fletcher32=p.get("fletcher32", False), attrs=attrs, fill=p.get("fill"))


def d_chunked(rng, S):
    return legit("chunked", {"paths": pick_subset(rng, datasets(S)), "chunk": rng.choice(["whole", "small", "big"]),
                             "r": rng.random(), "level": None})


def d_fletcher(rng, S):
    return legit("fletcher32", {"paths": pick_subset(rng, datasets(S)), "chunk": rng.choice(["whole", "small"]),
                                "r": rng.random(), "fletcher32": True, "shuffle": rng.random() < 0.5})


def d_fill_declared(rng, S):
    paths = [p for p in pick_subset(rng, datasets(S)) if S["datasets"][p]["kind"] in "iuf"]
    return legit("fill_declared", {"paths": paths, "chunk": "small", "r": rng.random(), "fill": -7})


def d_compact(rng, S):
    small = [p for p, m in S["datasets"].items() if int(np.prod(m["shape"] or [1])) * m["itemsize"] <= 16000]
    return legit("compact", {"paths": pick_subset(rng, sorted(small))})


def a_compact(ctx, p):
    for path in p["paths"]:
        data, tid, attrs = dataset_parts(ctx.f, path)
        make_dataset(ctx.f, path, data, tid=tid, layout="compact", attrs=attrs)


def d_string_width(rng, S):
    return legit("string_width", {"paths": pick_subset(rng, string_columns(S, nonempty=False)),
                                  "extra": rng.choice([1, 8, 100, 1024])})


def a_string_width(ctx, p):
    for path in p["paths"]:
        data, tid, attrs = dataset_parts(ctx.f, path)
        width = min(MAX_STRING, tid.get_size() + p["extra"])
        t = tid.copy()
        t.set_size(width)
        make_dataset(ctx.f, path, data.astype(f"S{width}"), tid=t, attrs=attrs)


def d_string_form(rng, S):
    return legit("string_form", {"paths": pick_subset(rng, string_columns(S, nonempty=False)),
                                 "form": rng.choice(["utf8", "nullterm"])})


def a_string_form(ctx, p):
    for path in p["paths"]:
        data, tid, attrs = dataset_parts(ctx.f, path)
        t = tid.copy()
        if p["form"] == "utf8":
            t.set_cset(h5t.CSET_UTF8)
        else:
            width = min(MAX_STRING, tid.get_size() + 1)
            t.set_size(width)
            t.set_strpad(h5t.STR_NULLTERM)
            data = data.astype(f"S{width}")
        make_dataset(ctx.f, path, data, tid=t, attrs=attrs)


def d_rebuild(rng, S):
    return legit("rebuild", {"order": rng.choice(["reverse", "shuffle", "sorted"]), "seed": rng.randrange(1 << 30),
                             "libver": rng.choice(["earliest", "v108", "latest"]), "userblock": rng.choice([0, 0, 512, 4096]),
                             "track_order": rng.random() < 0.3})


def a_rebuild(ctx, p):
    """Every object copied into a new file in another order (H5Ocopy keeps types, layouts, attributes)."""
    import random as _r
    tmp = ctx.path + ".rebuild"
    lv = {"earliest": ("earliest", "v110"), "v108": ("v108", "v110"), "latest": ("latest", "latest")}[p["libver"]]
    with h5py.File(ctx.seed_path, "r") as src, \
            h5py.File(tmp, "w", libver=lv, userblock_size=p["userblock"] or 0, track_order=p["track_order"]) as dst:
        groups, dsets = [], []
        src.visititems(lambda n, o: (groups if isinstance(o, h5py.Group) else dsets).append("/" + n))
        objs = groups + dsets
        if p["order"] == "reverse":
            objs = objs[::-1]
        elif p["order"] == "shuffle":
            _r.Random(p["seed"]).shuffle(objs)
        else:
            objs = sorted(objs)
        for o in objs:
            if o in groups:
                g = dst.require_group(o)
                write_attrs(g, read_attrs(src[o]))
            else:
                parent = o.rsplit("/", 1)[0] or "/"
                dst.require_group(parent)
                src.copy(src[o], dst[parent], name=o.rsplit("/", 1)[1])
        write_attrs(dst, read_attrs(src))
    if p["userblock"]:
        with open(tmp, "r+b") as f:
            f.write(b"userblock of a straggler-scan file\n")
    os.replace(tmp, ctx.path)


def d_h5repack(rng, S):
    # -m 1: h5repack cannot chunk the empty datasets (every healthy scan has some)
    args = rng.choice([["-m", "1", "-f", "GZIP=1"], ["-m", "1", "-f", "SHUF", "-f", "GZIP=9"], ["-m", "1", "-f", "FLET"],
                       ["-L"], ["-f", "NONE"], ["-m", "1", "-f", "GZIP=6", "-L"], ["--layout=CONTI"],
                       ["-m", "1", "-l", "CHUNK=64"]])
    return legit("h5repack", {"args": args})


def a_h5repack(ctx, p):
    exe = shutil.which("h5repack")
    if not exe:
        raise BuildError("no h5repack")
    tmp = ctx.path + ".repack"
    r = subprocess.run([exe] + p["args"] + [ctx.path, tmp], capture_output=True, timeout=60)
    if r.returncode:
        raise BuildError("h5repack failed: " + r.stderr.decode(errors="replace")[:200])
    os.replace(tmp, ctx.path)


LEGIT = {
    "identity": (2, d_identity, "h5", None),
    "gzip": (6, d_gzip, "h5", a_gzip),
    "chunked": (2, d_chunked, "h5", a_gzip),
    "fletcher32": (2, d_fletcher, "h5", a_gzip),
    "fill_declared": (1, d_fill_declared, "h5", a_gzip),
    "compact": (2, d_compact, "h5", a_compact),
    "string_width": (2, d_string_width, "h5", a_string_width),
    "string_form": (1, d_string_form, "h5", a_string_form),
    "rebuild": (3, d_rebuild, "file", a_rebuild),
    "h5repack": (2, d_h5repack, "file", a_h5repack),
}

FAMILIES = {
    "structure": (13, STRUCTURE),
    "sizes": (15, SIZES),
    "storage": (13, STORAGE),
    "strings": (13, STRINGS),
    "types": (5, TYPES),
    "values": (4, VALUES),
    "attributes": (8, ATTRIBUTES),
    "bytes": (9, BYTES),
    "path": (6, PATH),
    "legit": (14, LEGIT),
}


def draw(rng, family, S):
    """A recipe of this family for seed info S (redrawn when a variant does not apply)."""
    _, variants = FAMILIES[family]
    if family == "path":
        r = d_path(rng, S)
        r["family"] = family
        return r
    for _ in range(50):
        v = wchoice(rng, {k: w for k, (w, *_rest) in variants.items()})
        try:
            r = variants[v][1](rng, S)
        except Redraw:
            continue
        r["family"] = family
        return r
    raise Redraw()


def mode_of(r):
    return FAMILIES[r["family"]][1][r["variant"]][2]


def apply(r, ctx):
    """Turns ctx.path (a copy of the seed) into the case the recipe describes."""
    _, variants = FAMILIES[r["family"]]
    _, _, mode, fn = variants[r["variant"]]
    if fn is None:
        return
    if mode == "h5":
        with scan_h5.open_rw(ctx.path) as f:
            ctx.f = f
            fn(ctx, r["params"])
        ctx.f = None
    else:
        fn(ctx, r["params"])
    if mode in ("h5", "file") and os.path.isfile(ctx.path) and not os.path.islink(ctx.path):
        scan_h5.normalize_times(ctx.path)
