"""HDF5 helpers of fuzz_scan.py: timestamps made fixed (so that case i of seed S is always the same
bytes), object-header checksums, a seed's structure, and low-level dataset and attribute copies
that keep the exact file types.

HDF5 stamps every version-2 object header with four times (access, modification, change, birth)
unless told not to, and straggler-scan's writer does not tell it: two scans of the same run differ
in those bytes. `normalize_times` sets them to one fixed value and recomputes each header's Jenkins
lookup3 checksum (only headers whose checksum was valid are touched, so a stray "OHDR" inside raw
data is left alone).
"""
import ctypes
import json
import os

import h5py
import numpy as np
from h5py import h5a, h5d, h5p, h5s, h5t

FIXED_TIME = (0x60000000).to_bytes(4, "little") * 4  # 2021-01-14, all four times


def _rot(x, k):
    return ((x << k) | (x >> (32 - k))) & 0xFFFFFFFF


def lookup3(data, initval=0):
    """Bob Jenkins' hashlittle, as H5_checksum_lookup3 computes it."""
    length = len(data)
    a = b = c = (0xDEADBEEF + length + initval) & 0xFFFFFFFF
    i = 0
    M = 0xFFFFFFFF
    while length > 12:
        a = (a + int.from_bytes(data[i:i + 4], "little")) & M
        b = (b + int.from_bytes(data[i + 4:i + 8], "little")) & M
        c = (c + int.from_bytes(data[i + 8:i + 12], "little")) & M
        a = (a - c) & M; a ^= _rot(c, 4); c = (c + b) & M
        b = (b - a) & M; b ^= _rot(a, 6); a = (a + c) & M
        c = (c - b) & M; c ^= _rot(b, 8); b = (b + a) & M
        a = (a - c) & M; a ^= _rot(c, 16); c = (c + b) & M
        b = (b - a) & M; b ^= _rot(a, 19); a = (a + c) & M
        c = (c - b) & M; c ^= _rot(b, 4); b = (b + a) & M
        length -= 12
        i += 12
    if length == 0:
        return c
    tail = bytes(data[i:i + length]) + bytes(12 - length)
    a = (a + int.from_bytes(tail[0:4], "little")) & M
    b = (b + int.from_bytes(tail[4:8], "little")) & M
    c = (c + int.from_bytes(tail[8:12], "little")) & M
    c ^= b; c = (c - _rot(b, 14)) & M
    a ^= c; a = (a - _rot(c, 11)) & M
    b ^= a; b = (b - _rot(a, 25)) & M
    c ^= b; c = (c - _rot(b, 16)) & M
    a ^= c; a = (a - _rot(c, 4)) & M
    b ^= a; b = (b - _rot(a, 14)) & M
    c ^= b; c = (c - _rot(b, 24)) & M
    return c


def ohdr_headers(buf):
    """(start, times_at or None, end) of every version-2 object header whose chunk-0 checksum is
    valid; the checksum is the 4 bytes at end."""
    out = []
    i = buf.find(b"OHDR")
    while i >= 0:
        h = _ohdr(buf, i)
        if h and int.from_bytes(buf[h[1]:h[1] + 4], "little") == lookup3(buf[i:h[1]]):
            out.append((i, h[0], h[1]))
        i = buf.find(b"OHDR", i + 4)
    return out


def _ohdr(buf, i):
    if i + 7 > len(buf) or buf[i + 4] != 2:
        return None
    flags = buf[i + 5]
    p = i + 6
    times_at = None
    if flags & 0x20:
        times_at = p
        p += 16
    if flags & 0x10:
        p += 4
    n = 1 << (flags & 3)
    size = int.from_bytes(buf[p:p + n], "little")
    end = p + n + size
    if end + 4 > len(buf):
        return None
    return times_at, end


def fix_checksum(buf, start, end):
    buf[end:end + 4] = lookup3(buf[start:end]).to_bytes(4, "little")


def normalize_times(path):
    """Sets every object header's times to FIXED_TIME (checksums recomputed)."""
    with open(path, "rb") as f:
        buf = bytearray(f.read())
    changed = False
    i = buf.find(b"OHDR")
    while i >= 0:  # only headers with other times are checksummed (lookup3 in Python is slow)
        h = _ohdr(buf, i)
        if h and h[0] is not None and buf[h[0]:h[0] + 16] != FIXED_TIME \
                and int.from_bytes(buf[h[1]:h[1] + 4], "little") == lookup3(buf[i:h[1]]):
            buf[h[0]:h[0] + 16] = FIXED_TIME
            fix_checksum(buf, i, h[1])
            changed = True
        i = buf.find(b"OHDR", i + 4)
    if changed:
        with open(path, "wb") as f:
            f.write(buf)


def open_rw(path):
    return h5py.File(path, "r+", libver=("v108", "v110"))


# ---------------------------------------------------------------- a seed's structure


def describe(path, tables_json=None):
    """What the mutators draw from: datasets (dtype, shape, layout), groups, attributes per object,
    and the declared tables (scripts/scan_tables.json) present in the file, with their row counts."""
    info = {"datasets": {}, "groups": ["/"], "attrs": {}, "root_attrs": {}}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            p = "/" + name
            if isinstance(obj, h5py.Dataset):
                dt = obj.dtype
                info["datasets"][p] = {"dtype": dt.str, "kind": dt.kind, "itemsize": dt.itemsize,
                                       "shape": list(obj.shape), "chunks": list(obj.chunks) if obj.chunks else None}
            elif isinstance(obj, h5py.Group):
                info["groups"].append(p)
            attrs = {}
            for a in obj.attrs:
                v = np.asarray(obj.attrs[a])
                attrs[a] = {"kind": v.dtype.kind, "shape": list(v.shape), "itemsize": v.dtype.itemsize}
            if attrs:
                info["attrs"][p] = attrs
        f.visititems(visit)
        for a in f.attrs:
            v = np.asarray(f.attrs[a])
            info["root_attrs"][a] = {"kind": v.dtype.kind, "shape": list(v.shape), "itemsize": v.dtype.itemsize,
                                     "value": v.tolist() if v.dtype.kind in "iuf" and v.ndim == 0 else None}
        info["attrs"]["/"] = {k: {kk: vv for kk, vv in v.items() if kk != "value"} for k, v in info["root_attrs"].items()}
        info["tables"], info["table_of"] = declared_tables(f, tables_json)
    info["kind"] = ("scan" if "/ranks/rank" in info["datasets"] else
                    "compare" if any(p.startswith("/compare/") for p in info["datasets"]) else
                    "scaling" if "/scaling/rows/series" in info["datasets"] else "other")
    return info


def declared_tables(f, tables_json):
    """Entries of scan_tables.json present in f: [{"group", "columns": [dataset paths], "rows"}], and
    dataset path -> (entry index, role: col, values or offsets)."""
    entries, table_of = [], {}
    if not tables_json or not os.path.isfile(tables_json):
        return entries, table_of
    with open(tables_json) as fh:
        spec = json.load(fh)
    for t in spec.get("tables", []):
        g = t["path"]
        cols, rows = [], None
        for c in t["columns"]:
            p = f"{g}/{c['name']}"
            if c["shape"] == "ragged":
                po = p + "_offsets"
                if po in f and isinstance(f[po], h5py.Dataset) and f[po].ndim == 1:
                    cols.append((p, "values"))
                    cols.append((po, "offsets"))
                    rows = rows if rows is not None else f[po].shape[0] - 1
            elif p in f and isinstance(f[p], h5py.Dataset) and f[p].ndim >= 1:
                cols.append((p, "col"))
                rows = rows if rows is not None else f[p].shape[0]
        if not cols:
            continue
        idx = len(entries)
        entries.append({"group": g, "columns": [c for c, _ in cols], "rows": rows,
                        "row_columns": sum(1 for _, r in cols if r != "values")})
        for p, role in cols:
            table_of.setdefault(p, [idx, role])
    return entries, table_of


# ---------------------------------------------------------------- low-level copies keeping exact types


def read_attrs(obj):
    """[(name, type id, space id, array)] of an object's attributes, to put back unchanged."""
    out = []
    for name in list(obj.attrs):
        a = h5a.open(obj.id, name.encode())
        tid, sid = a.get_type(), a.get_space()
        if tid.get_class() == h5t.STRING and tid.is_variable_str():
            arr = np.asarray(obj.attrs[name])
            out.append((name, None, None, arr))
            continue
        if tid.get_class() == h5t.STRING:  # the bytes as stored, whatever the padding
            arr = np.empty(a.shape, dtype=f"S{tid.get_size()}")
            a.read(arr, mtype=tid)
        else:
            arr = np.empty(a.shape, dtype=a.dtype)
            a.read(arr)
        out.append((name, tid, sid, arr))
    return out


def write_attrs(obj, saved, skip=()):
    for name, tid, sid, arr in saved:
        if name in skip:
            continue
        if name in obj.attrs:
            del obj.attrs[name]
        if tid is None:
            obj.attrs[name] = arr
            continue
        a = h5a.create(obj.id, name.encode(), tid, sid)
        a.write(np.ascontiguousarray(arr), mtype=tid if tid.get_class() == h5t.STRING else None)


def lcpl():
    p = h5p.create(h5p.LINK_CREATE)
    p.set_create_intermediate_group(True)
    return p


def make_dataset(f, path, data, tid=None, layout="contiguous", chunks=None, maxshape=None, deflate=None,
                 shuffle=False, fletcher32=False, fill=None, write=True, attrs=None, filters=(), shape=None):
    """Creates path (deleting what is there) holding data (a numpy array) with this storage; tid keeps
    an exact file type (string padding, character set, byte order). attrs: read_attrs() to put back.
    filters: extra (id, flags, values) appended after the usual ones."""
    if path in f or f.get(path, getlink=True) is not None:
        del f[path]
    shape = tuple(data.shape) if shape is None else tuple(shape)
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)
    if layout == "chunked":
        if chunks is None:
            chunks = tuple(max(1, min(s, 4096)) for s in shape) if shape else None
        dcpl.set_chunk(tuple(int(c) for c in chunks))
        if shuffle:
            dcpl.set_shuffle()
        if deflate is not None:
            dcpl.set_deflate(int(deflate))
        for fid, flags, vals in filters:
            dcpl.set_filter(fid, flags, tuple(vals))
        if fletcher32:
            dcpl.set_fletcher32()
        if maxshape is None:
            maxshape = tuple(h5s.UNLIMITED if (s == 0 or c > s) else s for s, c in zip(shape, chunks))
    elif layout == "compact":
        dcpl.set_layout(h5d.COMPACT)
    if tid is None:
        tid = h5t.py_create(data.dtype, logical=True)
    if fill is not None:
        set_fill(dcpl, tid, np.array(fill, dtype=data.dtype))
    if shape == ():
        space = h5s.create(h5s.SCALAR)
    else:
        ms = tuple(h5s.UNLIMITED if m is None or m == h5s.UNLIMITED else int(m) for m in (maxshape or shape))
        space = h5s.create_simple(tuple(int(s) for s in shape), ms)
    dsid = h5d.create(f.id, path.encode(), tid, space, dcpl=dcpl, lcpl=lcpl())
    if write and data.size and tuple(data.shape) == shape:
        mtype = None
        if tid.get_class() == h5t.STRING and not tid.is_variable_str() and data.dtype.kind == "S" \
                and data.dtype.itemsize == tid.get_size():
            mtype = tid  # the bytes as they are, whatever the character set and padding
        dsid.write(h5s.ALL, h5s.ALL, np.ascontiguousarray(data), mtype=mtype)
    if attrs:
        write_attrs(f[path], attrs)
    return f[path]


def dataset_parts(f, path):
    """(data, exact type id, attributes) of a dataset, to rebuild it."""
    d = f[path]
    tid = d.id.get_type()
    if tid.get_class() == h5t.STRING and not tid.is_variable_str() and d.shape is not None:
        data = np.empty(d.shape, dtype=f"S{tid.get_size()}")  # the bytes as stored
        if data.size:
            d.id.read(h5s.ALL, h5s.ALL, data, mtype=tid)
        return data, tid, read_attrs(d)
    data = d[()]
    if not isinstance(data, np.ndarray):
        data = np.asarray(data, dtype=d.dtype)
    return data, tid, read_attrs(d)


# ---------------------------------------------------------------- the HDF5 library itself (ctypes)

_UD = {}


def hdf5_lib():
    """The HDF5 library h5py loaded (for what h5py gets wrong or lacks); None when not found."""
    if "lib" not in _UD:
        lib = None
        with open("/proc/self/maps") as m:
            for line in m:
                if "libhdf5" in line and "_hl" not in line and ".so" in line:
                    lib = line.split()[-1]
                    break
        _UD["lib"] = ctypes.CDLL(lib) if lib else None
        _UD["classes"] = {}
    return _UD["lib"]


def set_fill(dcpl, tid, value):
    """H5Pset_fill_value with value (a numpy scalar or 0-d array of tid's size): h5py 3.7 writes a
    pointer instead of a fixed-length string fill value (and so bytes that change from run to run)."""
    H = hdf5_lib()
    if H is None:
        raise RuntimeError("no HDF5 library found through h5py")
    arr = np.ascontiguousarray(np.asarray(value))
    buf = ctypes.create_string_buffer(arr.tobytes(), max(arr.nbytes, tid.get_size()))
    H.H5Pset_fill_value.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    if H.H5Pset_fill_value(dcpl.id, tid.id, buf) < 0:
        raise RuntimeError("H5Pset_fill_value failed")


def create_ud_link(group, name, class_id, data):
    """A user-defined link (class_id 64-255) through the HDF5 library h5py loaded; False when that
    library cannot be found."""
    H = hdf5_lib()
    if H is None:
        return False
    if class_id not in _UD["classes"]:
        trav_t = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_size_t,
                                  ctypes.c_int64, ctypes.c_int64)

        class H5LClass(ctypes.Structure):
            _fields_ = [("version", ctypes.c_int), ("id", ctypes.c_int), ("comment", ctypes.c_char_p),
                        ("create_func", ctypes.c_void_p), ("move_func", ctypes.c_void_p), ("copy_func", ctypes.c_void_p),
                        ("trav_func", trav_t), ("del_func", ctypes.c_void_p), ("query_func", ctypes.c_void_p)]
        trav = trav_t(lambda *a: -1)
        cls = H5LClass(1, class_id, b"scan fuzz", None, None, None, trav, None, None)
        if H.H5Lregister(ctypes.byref(cls)) < 0:
            return False
        _UD["classes"][class_id] = (cls, trav)
    H.H5Lcreate_ud.argtypes = [ctypes.c_int64, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                               ctypes.c_int64, ctypes.c_int64]
    return H.H5Lcreate_ud(group.id.id, name.encode(), class_id, data, len(data), 0, 0) >= 0
