"""Mutations of one nsys SQLite export, recorded as replayable operations.

Every operation is a small dict: {"kind": ..., "sql": [...]} for edits made through SQLite (values
are SQL expressions, so a 1 MB string stays a short recipe) or {"kind": ..., "raw": ...} for edits
of the file's bytes. apply_ops() replays a recipe on a copy of the seed; the fuzzer keeps recipes
so that failing cases can be described and minimized.
"""
import sqlite3

# Tables the reader uses, favoured over the rest of the schema.
HOT_TABLES = {
    "StringIds": 4, "CUPTI_ACTIVITY_KIND_KERNEL": 8, "CUPTI_ACTIVITY_KIND_RUNTIME": 5, "NVTX_EVENTS": 5,
    "CUPTI_ACTIVITY_KIND_MEMCPY": 2, "CUPTI_ACTIVITY_KIND_MEMSET": 1, "META_DATA_EXPORT": 2,
    "TARGET_INFO_SESSION_START_TIME": 2, "ANALYSIS_DETAILS": 2, "TARGET_INFO_SYSTEM_ENV": 1,
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": 1, "TARGET_INFO_GPU": 1, "TARGET_INFO_CUDA_STREAM": 1,
}
# Columns that hold ids: references into StringIds, CUPTI correlation, process/thread/stream/device ids.
ID_COLUMNS = {"id", "shortName", "demangledName", "mangledName", "nameId", "textId", "correlationId", "globalPid",
              "globalTid", "streamId", "deviceId", "contextId", "domainId", "eventType", "copyKind"}
TIME_COLUMNS = {"start", "end", "utcEpochNs", "systemClockNs", "startTime", "stopTime", "duration"}

I64_MAX, I64_MIN = 2**63 - 1, -2**63
INTS = [0, 1, -1, 2, 255, 256, 65535, 2**24 - 1, 2**24, 2**31 - 1, 2**31, -2**31, 2**32, 2**48, 2**53 + 1,
        I64_MAX, I64_MIN, I64_MAX - 1, I64_MIN + 1, 2**62]
HUGE_ID = [2**20, 2**24, 2**27, 2**31 - 1, 2**31, 2**40]  # memory-heavy when used as dense ids (D7)
STRINGS = [
    "''", "' '", "'NULL'", "'0'", "'-1'", "'abc'", "'1e400'", "'9223372036854775808'",
    "char(0)", "char(1,2,3,9,10,13,27,127)", "'a' || char(0) || 'b'",
    "CAST(x'ff' AS TEXT)", "CAST(x'c3' AS TEXT)", "CAST(x'eda080' AS TEXT)", "CAST(x'f4908080c0afe282' AS TEXT)",
    "printf('%.*c', 70000, 'x')", "printf('%.*c', 1000000, 'y')", "'train_step' || printf('%.*c', 30000, 'x')",
    "'ProfilerStep#' || printf('%.*c', 5000, '9')", "'iteration -1'", "'step 99999999999999999999'",
    "'ProfilerStep#1'", "'ncclDevKernel_AllReduce_Sum_f32_RING_LL'", "'ncclKernel_SendRecv'", "'NCCL'",
    "'ncclAllReduce'", "'ncclGroupEnd'", "'cudaLaunchKernel'", "'cudaStreamSynchronize'", "'%s%n%x'",
    "'../../../etc/passwd'", "'\u00e9\u4e2d\U0001f600'",
]
BLOBS = ["x''", "x'00'", "x'ff00ff00'", "randomblob(8)", "zeroblob(100000)"]
FLOATS = ["1.5", "-0.5", "1e308", "-1e308", "4.9e-324", "9.3e18", "-9.3e18", "1e19", "0.999999"]


def q(name):
    return '"' + name.replace('"', '""') + '"'


def schema(con):
    tables = {}
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"):
        tables[name] = [r[1] for r in con.execute(f"PRAGMA table_info({q(name)})")]
    return tables


def pick_table(rng, tables, need_rows=None, con=None):
    names = sorted(tables)
    weights = [HOT_TABLES.get(n, 0.3) for n in names]
    for _ in range(10):
        t = rng.choices(names, weights)[0]
        if not need_rows or con.execute(f"SELECT count(*) FROM {q(t)}").fetchone()[0] > 0:
            return t
    return None


def pick_column(rng, cols, prefer=None):
    good = [c for c in cols if prefer and c in prefer]
    return rng.choice(good) if good and rng.random() < 0.7 else rng.choice(cols)


def where_rows(rng, con, table):
    """A WHERE clause choosing one row, a few rows, a fraction, or all rows (by rowid, kept literal)."""
    ids = [r[0] for r in con.execute(f"SELECT rowid FROM {q(table)}")]
    if not ids:
        return "1"
    r = rng.random()
    if r < 0.45:
        return f"rowid = {rng.choice(ids)}"
    if r < 0.75:
        return "rowid IN (" + ",".join(str(i) for i in sorted(rng.sample(ids, min(len(ids), rng.randint(2, 6))))) + ")"
    if r < 0.9:
        return f"rowid % {rng.randint(2, 10)} = {rng.randint(0, 1)}"
    return "1"


def int_value(rng, col):
    r = rng.random()
    if col in ID_COLUMNS and r < 0.08:
        return str(rng.choice(HUGE_ID))
    if r < 0.45:
        return str(rng.choice(INTS))
    if r < 0.7:  # near the current value
        return f"{q(col)} + ({rng.choice([1, -1, 2, 7, -1000, 1000000, -1000000000, 10**12])})"
    if r < 0.8:
        return f"-{q(col)}"
    return str(rng.randint(-2**40, 2**40))


def huge(expr):
    return "printf" in expr or "zeroblob" in expr


def one_row(rng, con, table, value, where):
    """Huge values go into one row only: the file must stay small enough to copy per case."""
    if not huge(value):
        return where
    ids = [r[0] for r in con.execute(f"SELECT rowid FROM {q(table)} LIMIT 50")]
    return f"rowid = {rng.choice(ids)}" if ids else "0"


def sql_value(rng, col, kind):
    if kind == "null":
        return "NULL"
    if kind == "text":
        return rng.choice(STRINGS)
    if kind == "blob":
        return rng.choice(BLOBS)
    if kind == "float":
        return rng.choice(FLOATS)
    return int_value(rng, col)


def unconstrain_sql(con, table):
    """Rebuild a table without constraints (NOT NULL, PRIMARY KEY), keeping its column affinities."""
    tmp = table + "_fuzz_tmp"
    return [f"CREATE TABLE {q(tmp)} AS SELECT * FROM {q(table)}", f"DROP TABLE {q(table)}",
            f"ALTER TABLE {q(tmp)} RENAME TO {q(table)}"]


# --- SQL mutations: each returns (kind, [statements]) or None when it does not apply -------------

def m_value(rng, con, tables, kind):
    t = pick_table(rng, tables, True, con)
    if not t:
        return None
    prefer = ID_COLUMNS | TIME_COLUMNS if kind == "int" else {"value", "text", "shortName", "start", "end"}
    c = pick_column(rng, tables[t], prefer)
    v = sql_value(rng, c, kind)
    return t, [f"UPDATE {q(t)} SET {q(c)} = {v} WHERE {one_row(rng, con, t, v, where_rows(rng, con, t))}"]


def m_ids(rng, con, tables):
    """Id columns: swapped between rows, renumbered, shared, negative, huge."""
    cands = [(t, c) for t in tables for c in tables[t] if c in ID_COLUMNS and t in HOT_TABLES]
    if not cands:
        return None
    t, c = rng.choice(cands)
    r = rng.random()
    w = where_rows(rng, con, t)
    if r < 0.25:
        # another row's id (picked now, so that the recipe replays)
        donor = con.execute(f"SELECT {q(c)} FROM {q(t)} ORDER BY rowid LIMIT 1 OFFSET ?",
                            (rng.randrange(max(1, con.execute(f"SELECT count(*) FROM {q(t)}").fetchone()[0])),)).fetchone()
        stmt = f"UPDATE {q(t)} SET {q(c)} = {donor[0] if donor and isinstance(donor[0], int) else 'NULL'} WHERE {w}"
    elif r < 0.5:
        stmt = f"UPDATE {q(t)} SET {q(c)} = {q(c)} + {rng.choice([1, -1, 1 << 24, 1 << 32, 1000])} WHERE {w}"
    elif r < 0.7:
        stmt = f"UPDATE {q(t)} SET {q(c)} = -{q(c)} - 1 WHERE {w}"
    elif r < 0.85:
        stmt = f"UPDATE {q(t)} SET {q(c)} = {rng.choice(HUGE_ID + INTS)} WHERE {w}"
    else:
        stmt = f"UPDATE {q(t)} SET {q(c)} = NULL WHERE {w}"
    return t, [stmt]


def m_strings(rng, con, tables):
    cands = [(t, c) for t in tables for c in tables[t]
             if c in ("value", "text", "name", "hostname", "processName") and t in HOT_TABLES or
             (t == "NVTX_EVENTS" and c == "text")]
    if not cands:
        return None
    t, c = rng.choice(cands)
    if t == "StringIds" and rng.random() < 0.5:  # a kernel or NVTX name: find it by content
        w = rng.choice(["value LIKE 'nccl%'", "value LIKE '%Step%' OR value LIKE 'iteration%' OR value LIKE 'step%'",
                        "value LIKE 'cuda%'", "1"])
    elif t == "NVTX_EVENTS" and rng.random() < 0.5:  # a step marker (D2: a 30,000-character one)
        w = "rowid = (SELECT min(rowid) FROM NVTX_EVENTS WHERE text LIKE 'ProfilerStep%')"
    else:
        w = where_rows(rng, con, t)
    v = rng.choice(STRINGS)
    if huge(v) and t == "StringIds" and not w.startswith("rowid"):
        w = f"rowid = (SELECT min(rowid) FROM StringIds WHERE {w})"
    return t, [f"UPDATE {q(t)} SET {q(c)} = {v} WHERE {one_row(rng, con, t, v, w) if w.startswith('rowid %') or w == '1' else w}"]


def m_drop_table(rng, con, tables):
    t = pick_table(rng, tables)
    return (t, [f"DROP TABLE {q(t)}"]) if t else None


def m_empty_table(rng, con, tables):
    t = pick_table(rng, tables)
    return (t, [f"DELETE FROM {q(t)}"]) if t else None


def m_drop_column(rng, con, tables):
    t = pick_table(rng, tables)
    if not t or len(tables[t]) < 2:
        return None
    c = pick_column(rng, tables[t], ID_COLUMNS | TIME_COLUMNS | {"value", "text", "shortName"})
    keep = ", ".join(q(x) for x in tables[t] if x != c)
    tmp = t + "_fuzz_tmp"
    if rng.random() < 0.3:  # renamed instead of dropped
        return t, [f"ALTER TABLE {q(t)} RENAME COLUMN {q(c)} TO {q(c + '_x')}"]
    return t, [f"CREATE TABLE {q(tmp)} AS SELECT {keep} FROM {q(t)}", f"DROP TABLE {q(t)}",
               f"ALTER TABLE {q(tmp)} RENAME TO {q(t)}"]


def m_duplicate(rng, con, tables):
    t = pick_table(rng, tables, True, con)
    if not t:
        return None
    stmts = unconstrain_sql(con, t) if rng.random() < 0.5 else []
    stmts.append(f"INSERT INTO {q(t)} SELECT * FROM {q(t)} WHERE {where_rows(rng, con, t)}")
    return t, stmts


def m_delete_rows(rng, con, tables):
    t = pick_table(rng, tables, True, con)
    return (t, [f"DELETE FROM {q(t)} WHERE {where_rows(rng, con, t)}"]) if t else None


def m_reorder(rng, con, tables):
    t = pick_table(rng, tables, True, con)
    if not t:
        return None
    order = rng.choice(["rowid DESC", f"(rowid * {rng.choice([7, 13, 31])}) % 101", "1"])
    tmp = t + "_fuzz_tmp"
    return t, [f"CREATE TABLE {q(tmp)} AS SELECT * FROM {q(t)} ORDER BY {order}", f"DROP TABLE {q(t)}",
               f"ALTER TABLE {q(tmp)} RENAME TO {q(t)}"]


def m_times(rng, con, tables):
    """Time columns: reversed intervals, zero-length, overlapping, far in the past or future."""
    cands = [t for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
                         "CUPTI_ACTIVITY_KIND_MEMCPY") if t in tables and "start" in tables[t]]
    if not cands:
        return None
    t = rng.choice(cands)
    w = where_rows(rng, con, t)
    e = rng.choice(['"start" = "end", "end" = "start"', '"end" = "start"', '"end" = "start" - 1000000',
                    '"start" = "start" - 1000000000000', '"start" = "start" + 1000000000000000000',
                    '"start" = 0', f'"start" = {I64_MIN}, "end" = {I64_MIN} + 1000',
                    f'"start" = {I64_MAX} - 1000, "end" = {I64_MAX}', '"start" = "start" * 3'])
    return t, [f"UPDATE {q(t)} SET {e} WHERE {w}"]


# Columns each reader query takes (ranks/readers/nsys_reader.cpp), favoured by m_extreme.
READER_INT_COLUMNS = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ["start", "end", "streamId", "shortName", "correlationId", "globalPid", "deviceId"],
    "CUPTI_ACTIVITY_KIND_RUNTIME": ["start", "end", "globalTid", "correlationId", "nameId"],
    "NVTX_EVENTS": ["start", "end", "eventType", "textId", "domainId", "globalTid"],
    "CUPTI_ACTIVITY_KIND_MEMCPY": ["start", "end", "bytes", "copyKind", "streamId", "globalPid"],
    "CUPTI_ACTIVITY_KIND_MEMSET": ["start", "end", "bytes", "streamId", "globalPid"],
    "StringIds": ["id"],
    "TARGET_INFO_SESSION_START_TIME": ["utcEpochNs", "systemClockNs"],
    "ANALYSIS_DETAILS": ["startTime", "stopTime", "duration"],
}
EXTREMES = [I64_MIN, I64_MAX, -1, 0, 2**31, 2**32, 2**31 - 1, -2**31, I64_MIN + 1, I64_MAX - 1]


def int_columns(con, table):
    """Columns of integer affinity (declared INT...), e.g. every id, time and count of nsys tables."""
    return [r[1] for r in con.execute(f"PRAGMA table_info({q(table)})") if "INT" in (r[2] or "").upper()]


def m_extreme(rng, con, tables):
    """Class 1 (issue 17): INT64_MIN, INT64_MAX, -1, 0, 2^31, 2^32 in any integer column of a table the
    reader uses (a first kernel row with deviceId = INT64_MIN crashed), on the first row, the first
    in time, the last, all rows or some."""
    cands = [t for t in sorted(tables) if t in HOT_TABLES and
             con.execute(f"SELECT count(*) FROM {q(t)}").fetchone()[0] > 0 and int_columns(con, t)]
    if not cands:
        return None
    t = rng.choices(cands, [3 if c in READER_INT_COLUMNS else 1 for c in cands])[0]
    ints = int_columns(con, t)
    used = [c for c in READER_INT_COLUMNS.get(t, []) if c in ints]
    cols = []
    for _ in range(rng.choices([1, 2, 3], [6, 2, 1])[0]):
        c = rng.choice(used) if used and rng.random() < 0.75 else rng.choice(ints)
        if c not in cols:
            cols.append(c)
    r = rng.random()
    if r < 0.3:
        w = f"rowid = (SELECT min(rowid) FROM {q(t)})"
    elif r < 0.45 and "start" in tables[t]:
        w = f"rowid = (SELECT rowid FROM {q(t)} ORDER BY start, rowid LIMIT 1)"
    elif r < 0.55:
        w = f"rowid = (SELECT max(rowid) FROM {q(t)})"
    elif r < 0.75:
        w = "1"
    else:
        w = where_rows(rng, con, t)
    sets = ", ".join(f"{q(c)} = {rng.choice(EXTREMES)}" for c in cols)
    return t, [f"UPDATE {q(t)} SET {sets} WHERE {w}"]


SQL_MUTATIONS = {  # name -> (weight, function)
    "value_int": (6, lambda r, c, t: m_value(r, c, t, "int")),
    "type_text": (3, lambda r, c, t: m_value(r, c, t, "text")),
    "type_blob": (2, lambda r, c, t: m_value(r, c, t, "blob")),
    "type_float": (2, lambda r, c, t: m_value(r, c, t, "float")),
    "null": (4, lambda r, c, t: m_value(r, c, t, "null")),
    "ids": (8, m_ids),
    "strings": (5, m_strings),
    "drop_table": (2, m_drop_table),
    "empty_table": (2, m_empty_table),
    "drop_column": (3, m_drop_column),
    "duplicate_rows": (4, m_duplicate),
    "delete_rows": (2, m_delete_rows),
    "reorder_rows": (1, m_reorder),
    "times": (4, m_times),
}

# --- raw byte mutations ---------------------------------------------------------------------------


def page_size(data):
    ps = int.from_bytes(data[16:18], "big")
    return 65536 if ps == 1 else (ps if ps >= 512 else 4096)


def raw_op(rng, data):
    n, ps = len(data), page_size(data)
    pages = max(1, n // ps)
    r = rng.random()
    if r < 0.3:
        return {"kind": "raw_bitflip", "raw": "flip",
                "bits": [[rng.randrange(n), rng.randrange(8)] for _ in range(rng.choice([1, 1, 2, 5, 20]))]}
    if r < 0.45:
        page = rng.randrange(pages)
        return {"kind": "raw_bitflip", "raw": "flip",
                "bits": [[page * ps + rng.randrange(ps), rng.randrange(8)] for _ in range(rng.choice([1, 3, 10]))]}
    if r < 0.6:
        cut = rng.choice([rng.randrange(n), n - rng.randint(1, 512), (rng.randrange(pages)) * ps, 100, 0])
        return {"kind": "raw_truncate", "raw": "truncate", "size": max(0, cut)}
    if r < 0.75:
        return {"kind": "raw_zero_page", "raw": "zero", "offset": rng.randrange(pages) * ps, "size": ps}
    if r < 0.85:
        a, b = rng.randrange(pages), rng.randrange(pages)
        return {"kind": "raw_copy_page", "raw": "copy", "src": a * ps, "dst": b * ps, "size": ps}
    # header fields: page size, reserved bytes, database size, freelist, schema cookie, encoding
    off = rng.choice([16, 17, 18, 19, 20, 21, 28, 29, 30, 31, 32, 36, 40, 44, 48, 52, 56, 59, 60, 64, 96, 100, 103])
    return {"kind": "raw_header", "raw": "set", "offset": off, "bytes": [rng.choice([0, 1, 2, 3, 0x7f, 0x80, 0xff])]}


def apply_raw(path, op):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    kind = op["raw"]
    if kind == "flip":
        for off, bit in op["bits"]:
            if off < len(data):
                data[off] ^= 1 << bit
    elif kind == "truncate":
        del data[op["size"]:]
    elif kind == "zero":
        data[op["offset"]:op["offset"] + op["size"]] = bytes(len(data[op["offset"]:op["offset"] + op["size"]]))
    elif kind == "copy":
        chunk = data[op["src"]:op["src"] + op["size"]]
        data[op["dst"]:op["dst"] + len(chunk)] = chunk
    elif kind == "set":
        for i, b in enumerate(op["bytes"]):
            if op["offset"] + i < len(data):
                data[op["offset"] + i] = b
    with open(path, "wb") as f:
        f.write(data)


def apply_ops(path, ops):
    """Replays a recipe on the file at path (edited in place)."""
    for op in ops:
        if "raw" in op:
            apply_raw(path, op)
        else:
            con = sqlite3.connect(path, isolation_level=None)
            try:
                con.execute("BEGIN")
                for s in op["sql"]:
                    con.execute(s)
                con.execute("COMMIT")
            finally:
                con.close()


EXTREME_MUTATIONS = {"extreme_int": (1, m_extreme)}


def mutate(path, rng, mutations=None, raw=0.2):
    """Applies 1-3 random mutations (of `mutations`, default SQL_MUTATIONS, plus raw byte edits with
    probability `raw`) to the file at path; returns the recipe."""
    mutations = mutations or SQL_MUTATIONS
    ops = []
    n = rng.choices([1, 2, 3], [6, 3, 1])[0]
    for i in range(n):
        if rng.random() < raw and i == n - 1:  # raw edits come last: SQLite may refuse the file after them
            with open(path, "rb") as f:
                op = raw_op(rng, f.read())
            apply_raw(path, op)
            ops.append(op)
            continue
        con = sqlite3.connect(path, isolation_level=None)
        try:
            tables = schema(con)
            for _ in range(5):
                name = rng.choices(list(mutations), [w for w, _ in mutations.values()])[0]
                got = mutations[name][1](rng, con, tables)
                if not got:
                    continue
                table, stmts = got
                try:
                    con.execute("SAVEPOINT m")
                    applied = stmts
                    try:
                        for s in stmts:
                            con.execute(s)
                    except sqlite3.IntegrityError:
                        con.execute("ROLLBACK TO m")
                        applied = (unconstrain_sql(con, table) if table in tables else []) + stmts
                        for s in applied:
                            con.execute(s)
                    con.execute("RELEASE m")
                except sqlite3.Error:
                    con.execute("ROLLBACK TO m")
                    con.execute("RELEASE m")
                    continue
                ops.append({"kind": name, "table": table, "sql": applied})
                break
        finally:
            con.close()
    return ops
