#!/usr/bin/python3
"""The one way the scripts open a straggler-scan HDF5 file (a scan, or a compare or scaling output).

A scan file is as untrusted as a profile: people send each other `.h5` files. `open_scan` applies
the rules of docs/hdf5-layout.md, "Reading a scan someone sent you: what is refused" (the C++
reader, src/h5_read.hpp, applies the same ones) to the whole file before any value is read, and a
file that breaks one ends the script with one line on stderr and exit status 2:

    plot_stragglers.py: FILE: cannot read the scan back: OBJECT: PROBLEM

API:
    with open_scan(path, kind="scan", reads=("/ranks",)) as f:  # the checked h5py.File (read-only)
        hosts = strings(f["/ranks/host"])      # decoded up to the first NUL, made printable
        why = text(f["/clock"].attrs["not_corrected_because"])  # one value (str, or a list of str)
    kind="any": any straggler-scan output (compare, scaling); reads: the path prefixes the script
    reads, for the memory rule (None: all). A broken rule, or an error while the body reads the file
    (HDF5's, MemoryError, odd content): the one line, exit 2.
    fail(path, "OBJECT: PROBLEM")      # the one line, exit 2 (SystemExit)
    printable(b"\\x1b[2J")             # '\\x1b[2J': common::printable (src/common/text.cpp)
    check(h5py_file, kind, reads)      # the rules on an open file: ScanError("OBJECT: PROBLEM")
    setup_matplotlib()                 # Agg; text.parse_math off: `$` in a label is never mathtext
    math_ticks(fig)                    # log axes' own tick labels ($2^{3}$) keep mathtext
    scripts/scan_file.py [--any] FILE...   # checks files from the command line

Rules, as h5py sees them (numbers: the rules' list in the doc):
 1. os.open(O_RDONLY | O_NONBLOCK | O_CLOEXEC) (a FIFO does not block), fstat S_ISREG, then HDF5
    opens /proc/self/fd/N: the descriptor checked is the file read.
 2. Every link from the root, walked by address (hard-link cycles end), is a hard link; every
    dataset's layout is contiguous, chunked or compact (dcpl.get_layout()), without external storage
    (dcpl.get_external_count()), its filters deflate, shuffle or fletcher32 only; no plugin is loaded.
 3. Contiguous: get_storage_size() == its logical bytes; chunked: get_num_chunks() == the chunks its
    extent needs; filtered: at most MAX_EXPANSION times its stored bytes.
 4. Integers and floats of at most 8 bytes, fixed-length strings of at most MAX_STRING_BYTES; at most
    2 dimensions; attributes checked alike through h5py.h5a before their value is read, each at most
    MAX_ATTRIBUTE_BYTES.
 5. The declared tables (scan_tables.json, generated from src/tables): each column present has the
    table's rows (a matrix: rows x width; a summed table: 1-D); ragged offsets are rows + 1
    non-decreasing values from 0 to the values' length; /ranks has the root attribute `ranks` rows,
    ranks in [0, max_ranks), ascending and unique.
 6. The logical bytes of every dataset and attribute together stay under half the physical memory;
    what this script will read (`reads`), counted with Python's own overhead per element (lists of
    objects), under half of the memory it may use (physical, cgroup, `ulimit -v`).
 7. Strings read back go through printable() before they reach a terminal, a page or a plot.
Python only: at most MAX_OBJECTS links and attributes are walked (the time to check stays seconds),
and the checks run first in a child process, so that a damaged file on which the HDF5 library
itself crashes or loops is refused in one line too (then again in this one).
"""
import contextlib
import json
import math
import os
import re
import resource
import select
import signal
import stat
import sys
import time

# Rule 2: no filter plugin is ever loaded. HDF5 reads this when it first looks for a plugin.
os.environ["HDF5_PLUGIN_PRELOAD"] = "::"
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from h5py import h5a, h5d, h5l, h5o, h5pl, h5s, h5t, h5z  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TABLES_JSON = os.path.join(HERE, "scan_tables.json")

MAX_ATTRIBUTE_BYTES = 64 << 20
MAX_EXPANSION = 1100     # deflate cannot exceed 1,032
MAX_DIMS = 2
MAX_OBJECTS = 65536      # links and attributes walked; a scan has a few hundred
CHECK_SECONDS = 60       # the checks run apart (a child process) and end within this
PY_ELEMENT_BYTES = 64    # a list slot and a Python object per element read into a list
FILTERS = {h5z.FILTER_DEFLATE: "deflate", h5z.FILTER_SHUFFLE: "shuffle", h5z.FILTER_FLETCHER32: "fletcher32"}
TOOL = "straggler-scan"


def _load_tables():
    with open(TABLES_JSON, encoding="utf-8") as f:
        return json.load(f)


TABLES = _load_tables()
FORMAT_VERSION = int(TABLES["format_version"])
MAX_STRING_BYTES = int(TABLES["max_string_bytes"])
MAX_RANKS = int(TABLES["max_ranks"])


# ---------------------------------------------------------------- text


def _invisible_control(cp):
    """common::invisible_control: characters that hide or reorder text."""
    return (0x80 <= cp <= 0x9f or cp == 0x061c or 0x200b <= cp <= 0x200f or cp in (0x2028, 0x2029)
            or 0x202a <= cp <= 0x202e or 0x2060 <= cp <= 0x2069 or cp == 0xfeff or 0xfff9 <= cp <= 0xfffb)


def _utf8_length(b, i):
    """common::utf8_length: bytes of the valid UTF-8 character at b[i], 0 if it is not one."""
    c = b[i]
    n = 1 if c < 0x80 else 2 if c >> 5 == 0x6 else 3 if c >> 4 == 0xe else 4 if c >> 3 == 0x1e else 0
    if n == 0 or i + n > len(b):
        return 0
    if any(b[i + k] & 0xc0 != 0x80 for k in range(1, n)):
        return 0
    if n == 2 and c < 0xc2:
        return 0  # overlong
    if n == 3 and c == 0xe0 and b[i + 1] < 0xa0:
        return 0  # overlong
    if n == 3 and c == 0xed and b[i + 1] >= 0xa0:
        return 0  # surrogate
    if n == 4 and (c > 0xf4 or (c == 0xf0 and b[i + 1] < 0x90) or (c == 0xf4 and b[i + 1] >= 0x90)):
        return 0
    return n


_PLAIN = re.compile(rb"[\x20-\x7e]*")


def printable(value, ascii_only=False):
    """common::printable (src/common/text.cpp): \\n \\r \\t, other control bytes and bytes that are
    not UTF-8 as \\xNN, invisible or reordering characters (U+202E...) as \\uNNNN; ascii_only: every
    non-ASCII character so (common::printable_ascii). Bytes or str in, str out."""
    b = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
    if _PLAIN.fullmatch(b):
        return b.decode("ascii")
    out, i = [], 0
    while i < len(b):
        c = b[i]
        if c == 0x0a:
            out.append("\\n")
        elif c == 0x0d:
            out.append("\\r")
        elif c == 0x09:
            out.append("\\t")
        elif c < 0x20 or c == 0x7f:
            out.append(f"\\x{c:02x}")
        elif c >= 0x80:
            n = _utf8_length(b, i)
            if n == 0:
                out.append(f"\\x{c:02x}")
            else:
                ch = b[i:i + n].decode("utf-8")
                cp = ord(ch)
                if _invisible_control(cp) or ascii_only:
                    out.append(f"\\U{cp:08x}" if cp > 0xffff else f"\\u{cp:04x}")
                else:
                    out.append(ch)
                i += n - 1
        else:
            out.append(chr(c))
        i += 1
    return "".join(out)


def text(value):
    """A value from the file as text: bytes up to the first NUL (as the C++ reader reads a fixed-length
    string), made printable; a string array: a list of them; anything else unchanged."""
    if isinstance(value, (bytes, np.bytes_)):
        return printable(bytes(value).split(b"\0", 1)[0])
    if isinstance(value, str):
        return printable(value.split("\0", 1)[0])
    if isinstance(value, np.ndarray) and value.dtype.kind in "SUO":
        return [text(v) for v in value.ravel()]
    return value


def strings(ds):
    """A string dataset (or array) as a list of printable str."""
    values = ds[()] if isinstance(ds, h5py.Dataset) else ds
    return [text(v) if isinstance(v, (bytes, np.bytes_, str)) else printable(str(v)) for v in np.ravel(values)]


# ---------------------------------------------------------------- failing


class ScanError(Exception):
    """A rule the file breaks: OBJECT: PROBLEM (OBJECT empty for the file as a whole)."""

    def __init__(self, obj, problem):
        super().__init__(f"{obj}: {problem}" if obj else problem)


def fail(path, message, program=None):
    """One line on stderr naming the file (made printable) and what is wrong; exit status 2."""
    prog = program or os.path.basename(sys.argv[0]) or "python3"
    sys.stderr.write(f"{prog}: {printable(os.fsencode(path))}: cannot read the scan back: {printable(message)}\n")
    sys.stderr.flush()
    raise SystemExit(2)


def _name(b):
    return printable(b if isinstance(b, bytes) else str(b).encode())


# ---------------------------------------------------------------- rule 1: a regular file

_KINDS = [(stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")]


def _open_regular(path):
    """A read-only descriptor on the regular file `path` names (a symlink to one is followed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ScanError("", "no such file") from None
    except OSError as e:
        raise ScanError("", e.strerror or str(e)) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a file")
        raise ScanError("", f"not a regular file ({kind})")
    return fd


# ---------------------------------------------------------------- rules 2-4: objects


_CLASS_NAMES = {h5t.ENUM: "an enum type", h5t.COMPOUND: "a compound type", h5t.VLEN: "a variable-length sequence",
                h5t.ARRAY: "an array type", h5t.OPAQUE: "an opaque type", h5t.REFERENCE: "references",
                h5t.BITFIELD: "a bit field", h5t.TIME: "a time type"}


def _check_type(obj, tid):
    """The element size of an allowed type; ScanError otherwise."""
    cls, size = tid.get_class(), tid.get_size()
    if cls == h5t.INTEGER:
        if size not in (1, 2, 4, 8):
            raise ScanError(obj, f"{size}-byte integers (at most 8 bytes: 1, 2, 4 or 8)")
    elif cls == h5t.FLOAT:
        if size not in (2, 4, 8):
            raise ScanError(obj, f"{size}-byte floats (at most 8 bytes: 2, 4 or 8)")
    elif cls == h5t.STRING:
        if tid.is_variable_str():
            raise ScanError(obj, "variable-length strings (the writer makes fixed-length ones)")
        if size > MAX_STRING_BYTES:
            raise ScanError(obj, f"{size}-byte strings, more than {MAX_STRING_BYTES:,}")
    else:
        raise ScanError(obj, f"{_CLASS_NAMES.get(cls, f'type class {cls}')} (only numbers and fixed-length strings)")
    return size


def _check_space(obj, sid):
    """The dimensions of an allowed data space."""
    kind = sid.get_simple_extent_type()
    if kind == h5s.NULL:
        raise ScanError(obj, "an empty (null) data space")
    dims = tuple(int(d) for d in sid.shape) if kind == h5s.SIMPLE else ()
    if len(dims) > MAX_DIMS:
        raise ScanError(obj, f"{len(dims)} dimensions, more than {MAX_DIMS}")
    return dims


class _Walk:
    """What the walk found: dataset path -> (dims, element size, logical bytes); byte totals."""

    def __init__(self):
        self.datasets = {}
        self.total_bytes = 0
        self.objects = 0

    def count(self, obj):
        self.objects += 1
        if self.objects > MAX_OBJECTS:
            raise ScanError(obj, f"more than {MAX_OBJECTS:,} links and attributes (a scan has a few hundred)")

    def attributes(self, path, oid):
        for i in range(h5a.get_num_attrs(oid)):
            aid = h5a.open(oid, index=i)
            obj = f"{path}@{_name(aid.name)}"
            self.count(obj)
            size = _check_type(obj, aid.get_type())
            dims = _check_space(obj, aid.get_space())
            nbytes = math.prod(dims) * size
            if nbytes > MAX_ATTRIBUTE_BYTES:
                raise ScanError(obj, f"{nbytes:,} bytes, more than {MAX_ATTRIBUTE_BYTES >> 20} MiB for an attribute")
            self.total_bytes += nbytes

    def dataset(self, path, did):
        size = _check_type(path, did.get_type())
        dims = _check_space(path, did.get_space())
        n = math.prod(dims)
        logical = n * size
        dcpl = did.get_create_plist()
        if dcpl.get_external_count() > 0:
            where = _name(dcpl.get_external(0)[0])
            raise ScanError(path, f"stores its values outside the file (external storage in {where})")
        layout = dcpl.get_layout()
        if layout == h5d.VIRTUAL:
            raise ScanError(path, "a virtual dataset (its values would come from other files)")
        if layout not in (h5d.CONTIGUOUS, h5d.CHUNKED, h5d.COMPACT):
            raise ScanError(path, f"layout {layout} (only contiguous, chunked or compact)")
        filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
        for code in filters:
            if code not in FILTERS:
                raise ScanError(path, f"filter {code} (only deflate, shuffle and fletcher32 are read)")
        if n > 0:
            stored = did.get_storage_size()
            if layout == h5d.CONTIGUOUS and stored != logical:
                raise ScanError(path, f"not written: {stored:,} of its {logical:,} bytes stored "
                                      "(the rest would read as its fill value)")
            if layout == h5d.CHUNKED:
                chunk = dcpl.get_chunk()
                need = math.prod(-(-d // c) for d, c in zip(dims, chunk))
                have = did.get_num_chunks()
                if have != need:
                    raise ScanError(path, f"not written: {have:,} of its {need:,} chunks stored "
                                          "(the rest would read as its fill value)")
            if filters and logical > MAX_EXPANSION * stored:
                raise ScanError(path, f"{stored:,} bytes that expand to {logical:,}, more than "
                                      f"{MAX_EXPANSION:,} times (a compression bomb)")
        self.datasets[path] = (dims, size, logical)
        self.total_bytes += logical

    def run(self, fid):
        root = h5o.open(fid, b"/")
        seen = {h5o.get_info(root).addr}
        self.attributes("/", root)
        stack = [("", root)]
        while stack:
            path, gid = stack.pop()
            links = []

            def note(name, info):
                links.append((name, info.type))
                return True if len(links) + self.objects > MAX_OBJECTS else None

            gid.links.iterate(note, info=True)
            for name, kind in links:
                child = f"{path}/{_name(name)}"
                self.count(child)
                if kind == h5l.TYPE_SOFT:
                    target = _name(gid.links.get_val(name))
                    raise ScanError(child, f"a soft link (to {target}; only hard links are read)")
                if kind == h5l.TYPE_EXTERNAL:
                    target = gid.links.get_val(name)
                    raise ScanError(child, f"an external link (to {_name(target[0])}:{_name(target[1])}; "
                                           "nothing outside the file is read)")
                if kind != h5l.TYPE_HARD:
                    raise ScanError(child, f"a user-defined link (type {kind}; only hard links are read)")
                oid = h5o.open(gid, name)
                info = h5o.get_info(oid)
                if info.addr in seen:
                    continue  # the same object by another hard link (or a cycle): checked once
                seen.add(info.addr)
                self.attributes(child, oid)
                if info.type == h5o.TYPE_GROUP:
                    stack.append((child, oid))
                elif info.type == h5o.TYPE_DATASET:
                    self.dataset(child, oid)
                else:
                    raise ScanError(child, "a named datatype (not something the writer makes)")
        return self


# ---------------------------------------------------------------- rule 6: memory


def physical_memory():
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def usable_memory():
    """What this process may use: physical memory, less where a cgroup or `ulimit -v` says so."""
    limits = [physical_memory()]
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limits.append(soft)
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            value = f.read().strip()
        if value.isdigit():
            limits.append(int(value))
    except OSError:
        pass
    return min(limits)


def _reads(walk, reads):
    """Datasets under the path prefixes `reads` (None: all)."""
    if reads is None:
        return list(walk.datasets.items())
    prefixes = [p.rstrip("/") for p in reads]
    return [(p, v) for p, v in walk.datasets.items() if any(p == q or p.startswith(q + "/") for q in prefixes)]


def _check_memory(walk, reads):
    budget = physical_memory() // 2
    if walk.total_bytes > budget:
        raise ScanError("", f"its datasets and attributes hold {walk.total_bytes:,} bytes, more than half of "
                            f"this machine's memory ({budget:,})")
    cost = sum(logical + math.prod(dims) * (PY_ELEMENT_BYTES + size)
               for _, (dims, size, logical) in _reads(walk, reads))
    allowed = usable_memory() // 2
    if cost > allowed:
        raise ScanError("", f"reading it would take about {cost >> 20:,} MiB, more than the {allowed >> 20:,} MiB "
                            "this reader allows itself (half the memory it may use)")


# ---------------------------------------------------------------- rule 5: tables, and the format


def _string_attribute(f, name):
    """A root string attribute, or None when absent or not one fixed-length string (checked first)."""
    if name not in f.attrs:
        return None
    aid = h5a.open(h5o.open(f.id, b"/"), name=name.encode())
    if (aid.get_type().get_class() != h5t.STRING or aid.get_type().is_variable_str()
            or aid.get_space().get_simple_extent_npoints() != 1 or aid.get_type().get_size() > MAX_STRING_BYTES):
        return None
    return text(np.ravel(f.attrs[name])[0])


def _integer_attribute(f, obj, name):
    aid = h5a.open(h5o.open(f.id, b"/"), name=name.encode())
    if aid.get_type().get_class() != h5t.INTEGER or aid.get_space().get_simple_extent_npoints() != 1:
        raise ScanError(obj, "not one integer")
    return int(np.ravel(f.attrs[name])[0])


def _check_format(f, kind):
    """As src/scan_load.cpp check_format: the tool, then the format version (scans: required)."""
    if _string_attribute(f, "tool") != TOOL:
        raise ScanError("", f'not a straggler-scan output (no tool attribute "{TOOL}")')
    if "format_version" not in f.attrs:
        if kind == "scan":
            version = _string_attribute(f, "version") or "?"
            raise ScanError("", f"written by straggler-scan {version}, before scans could be read back "
                                "(no format_version); scan the profiles again")
        return
    v = _integer_attribute(f, "/@format_version", "format_version")
    if v != FORMAT_VERSION:
        raise ScanError("", f"format version {v}, this reader reads version {FORMAT_VERSION}")


_KIND_OF = {"string": "s", "float32": "f", "float64": "f"}  # the rest: integers


def _column_type(obj, did, declared):
    cls = did.get_type().get_class()
    want = _KIND_OF.get(declared, "i")
    ok = {"s": (h5t.STRING,), "f": (h5t.FLOAT, h5t.INTEGER), "i": (h5t.INTEGER,)}[want]
    if cls not in ok:
        words = {"s": "strings", "f": "numbers", "i": "integers"}[want]
        raise ScanError(obj, f"{'strings' if cls == h5t.STRING else 'numbers'} where the layout has {words}")


def _dataset(f, walk, path):
    """The dataset at `path` (checked by the walk), None when absent."""
    obj = f.get(path)
    if obj is None:
        return None
    if not isinstance(obj, h5py.Dataset):
        raise ScanError(path, "a group where the layout has a column")
    return obj


def _check_table(f, walk, table, ragged):
    """Each column present has the table's rows; ragged columns' offsets are collected."""
    group, summed = table["path"], table["distribution"] == "summed"
    if group not in f:
        return None
    if not isinstance(f[group], h5py.Group):
        raise ScanError(group, "a dataset where the layout has a table (a group)")
    rows, first = None, None
    for col in table["columns"]:
        name, shape = col["name"], col["shape"]
        path = f"{group.rstrip('/')}/{name}"
        ds = _dataset(f, walk, path)
        offsets = _dataset(f, walk, path + "_offsets") if shape == "ragged" else None
        if shape == "ragged" and (ds is None) != (offsets is None):
            raise ScanError(path + ("_offsets" if offsets is None else ""), "missing (a ragged column has both)")
        if ds is None:
            continue
        _column_type(path, ds.id, col["type"])
        if summed:
            if ds.ndim != 1:
                raise ScanError(path, f"{ds.ndim} dimensions where the layout has one row of values (1)")
            continue
        if shape == "matrix":
            if ds.ndim != 2:
                raise ScanError(path, f"{ds.ndim} dimensions where the layout has a matrix (2)")
            n = ds.shape[0]
        elif shape == "ragged":
            if ds.ndim != 1 or offsets.ndim != 1:
                raise ScanError(path if ds.ndim != 1 else path + "_offsets", "not 1-D")
            if offsets.id.get_type().get_class() != h5t.INTEGER:
                raise ScanError(path + "_offsets", "not integers")
            if offsets.shape[0] == 0:
                raise ScanError(path + "_offsets", "no values (it has rows + 1)")
            n = offsets.shape[0] - 1
            ragged.append((path, ds, offsets))
        else:
            if ds.ndim != 1:
                raise ScanError(path, f"{ds.ndim} dimensions where the layout has a column (1)")
            n = ds.shape[0]
        if rows is None:
            rows, first = n, path + ("_offsets" if shape == "ragged" else "")
        elif n != rows:
            what = path + ("_offsets" if shape == "ragged" else "")
            extra = " (+ 1)" if shape == "ragged" else ""
            raise ScanError(what, f"{n:,} rows{extra} where {first} has {rows:,}")
    return rows


def _check_tables(f, walk):
    ragged, ranks_rows = [], None
    for table in TABLES["tables"]:
        rows = _check_table(f, walk, table, ragged)
        if table["path"] == "/ranks" and table["distribution"] == "by_rank":
            ranks_rows = rows
    if "/ranks" in f:
        if "ranks" not in f.attrs:
            raise ScanError("/@ranks", "missing (the rows of /ranks)")
        total = _integer_attribute(f, "/@ranks", "ranks")
        if (ranks_rows or 0) != total:
            raise ScanError("/ranks", f"{ranks_rows or 0:,} rows where the root attribute ranks says {total:,}")
    return ragged


def _check_values(f, ragged):
    """The few values the rules are about: ragged offsets and the ranks."""
    for path, ds, offsets in ragged:
        o = offsets[()]
        if o[0] != 0:
            raise ScanError(path + "_offsets", f"starts at {o[0]}, not 0")
        down = np.nonzero(o[1:] < o[:-1])[0]
        if len(down):
            i = int(down[0]) + 1
            raise ScanError(path + "_offsets", f"decreases at row {i} ({o[i - 1]} then {o[i]})")
        if o[-1] != ds.shape[0]:
            raise ScanError(path + "_offsets", f"ends at {o[-1]}, not at the {ds.shape[0]:,} values of {path}")
    if "/ranks/rank" in f:
        r = f["/ranks/rank"][()]
        bad = np.nonzero((r < 0) | (r >= MAX_RANKS))[0]
        if len(bad):
            raise ScanError("/ranks/rank", f"rank {r[bad[0]]} (row {bad[0]}) outside [0, {MAX_RANKS:,})")
        down = np.nonzero(r[1:] <= r[:-1])[0]
        if len(down):
            i = int(down[0]) + 1
            raise ScanError("/ranks/rank", f"not ascending and unique: rank {r[i]} after {r[i - 1]} (row {i})")


# ---------------------------------------------------------------- opening


def _no_plugins():
    """Rule 2: the plugin search path emptied as well (HDF5_PLUGIN_PRELOAD above disables loading)."""
    while h5pl.size() > 0:
        h5pl.remove(0)


def check(f, kind="scan", reads=None):
    """Every rule on an open h5py.File; ScanError naming the first object that breaks one."""
    _check_format(f, kind)  # first (its attributes checked before they are read): another tool's file says so
    walk = _Walk().run(f.id)
    ragged = _check_tables(f, walk)  # shapes only: nothing read yet
    if kind == "scan" and "/ranks/rank" not in f:
        raise ScanError("/ranks/rank", "missing (not a scan)")
    _check_memory(walk, reads)
    _check_values(f, ragged)
    return walk


def _open_fd(fd):
    try:
        return h5py.File(f"/proc/self/fd/{fd}", "r")
    except OSError as e:
        raise ScanError("", f"not an HDF5 file ({e})") from None


def _verdict(fd, kind, reads):
    """check() of the file on `fd`, as bytes: b"K" or b"E" and the message."""
    try:
        with _open_fd(fd) as f:
            check(f, kind, reads)
        return b"K"
    except ScanError as e:
        message = str(e)
    except MemoryError:
        message = "out of memory checking it"
    except Exception as e:  # noqa: BLE001  (HDF5's own errors on a damaged file)
        message = f"{type(e).__name__}: {e}"
    return b"E" + message.encode("utf-8", "backslashreplace")


def _check_apart(fd, kind, reads):
    """The checks first run in a child process: a damaged file on which the HDF5 library crashes or
    loops (a broken B-tree, a corrupt heap) is refused like any other, in at most CHECK_SECONDS."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            os.close(r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)  # what a crash prints (glibc's "double free"): not a second line
            os.environ["LIBC_FATAL_STDERR_"] = "1"  # there, not on the terminal
            verdict = _verdict(fd, kind, reads)
            while verdict:
                verdict = verdict[os.write(w, verdict):]
        finally:
            os._exit(0)
    os.close(w)
    chunks, deadline = [], time.monotonic() + CHECK_SECONDS
    with os.fdopen(r, "rb") as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([pipe], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise ScanError("", f"checking it took more than {CHECK_SECONDS} s")
            chunk = os.read(pipe.fileno(), 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        raise ScanError("", f"it crashes the HDF5 library (signal {os.WTERMSIG(status)}): a damaged file")
    verdict = b"".join(chunks)
    if verdict != b"K":
        raise ScanError("", verdict[1:].decode("utf-8", "replace") or "the check ended without a verdict")


def _open(path, kind, reads):
    fd = _open_regular(path)
    try:
        _check_apart(fd, kind, reads)
        f = _open_fd(fd)
    finally:
        os.close(fd)  # HDF5 holds its own descriptor on the same file now
    try:
        check(f, kind, reads)  # again, in this process: what it reads is what was checked
    except BaseException:
        f.close()
        raise
    return f


# Errors while reading a checked file that mean its content, not the output: HDF5's own (OSError
# without an errno: a damaged chunk, a checksum), and the ones odd values raise in the scripts.
_CONTENT_ERRORS = (KeyError, ValueError, TypeError, IndexError, ZeroDivisionError, RuntimeError)


@contextlib.contextmanager
def open_scan(path, kind="scan", reads=None):
    """The checked h5py.File (read-only). kind "scan": a scan (format_version, /ranks); "any": any
    straggler-scan output (compare, scaling). reads: the path prefixes the script will read (None:
    all), for the memory rule. A broken rule, here or while the body reads: fail() (exit 2)."""
    _no_plugins()
    try:
        f = _open(path, kind, reads)
    except ScanError as e:
        fail(path, str(e))
    except MemoryError:
        fail(path, "out of memory checking it")
    except (OSError, *_CONTENT_ERRORS) as e:
        fail(path, f"{type(e).__name__}: {e}")
    try:
        with f:
            yield f
    except ScanError as e:
        fail(path, str(e))
    except MemoryError:
        fail(path, "out of memory reading it")
    except OSError as e:
        if e.errno is not None:
            raise  # writing an output, not reading the scan
        fail(path, f"{type(e).__name__}: {e}")
    except _CONTENT_ERRORS as e:
        fail(path, f"unexpected content ({type(e).__name__}: {e})")


# ---------------------------------------------------------------- plots


def setup_matplotlib():
    """Agg, and text is never mathtext: a host named `$\\sqrt{$` is a name, not a formula (R15)."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False
    return matplotlib


def math_ticks(fig):
    """Log axes' own tick labels are mathtext ($2^{3}$) made by matplotlib, not text from the file:
    they keep parsing it. Call before the figure is first drawn."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() != "log":
                continue
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                tick.label1.set_parse_math(True)
                tick.label2.set_parse_math(True)


if __name__ == "__main__":
    # scripts/scan_file.py FILE...: check each; "ok" or the one line (exit 2 at the first refused).
    if len(sys.argv) < 2:
        sys.exit("usage: scripts/scan_file.py [--any] SCAN.h5...")
    kind = "any" if sys.argv[1] == "--any" else "scan"
    for p in sys.argv[2 if kind == "any" else 1:]:
        with open_scan(p, kind=kind):
            print(f"{printable(os.fsencode(p))}: ok")
