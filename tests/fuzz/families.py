"""Case families beside the plain mutations (issue 17 defect classes), each seeded and replayable.

A case is described by a dict (case.json); its "kind" names the family:
  mutate       1-3 random mutations of one rank file (the original fuzzer; no "kind" means this)
  extreme_ids  INT64_MIN/MAX, -1, 0, 2^31, 2^32 in integer columns of the tables the reader uses
  journal      a rollback journal or write-ahead log beside a profile (torn copies and harmless ones)
  per_host     per-host files (node-NN.sqlite) with stray processes, or a huge node number
  rank_names   rank numbers from file names that are process ids (nsys -o report.%p), or plausible
  links        symlinked/hard-linked inputs named as outputs, outputs that are FIFOs, links, devices
  write_fault  write calls on the temporaries failing (LD_PRELOAD libwrite_faults.so), maybe under mpirun
describe(kind, rng, seeds) draws a description; materialize(seeds, desc, casedir) builds the case
directory from it, the same every time (journal nonces and WAL salts are fixed). How the tool is
run ("run": input folder, outputs, extra arguments, environment, mpirun) is part of the description;
what it must then do is oracle.expectations(desc).
"""
import os
import random
import shutil
import sqlite3
import stat

import mutate

KIND_WEIGHTS = {"mutate": 66, "extreme_ids": 10, "journal": 6, "per_host": 6, "rank_names": 3, "links": 5,
                "write_fault": 4}
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
GEN_SEEDS = ("gen", "gen30", "genbig")
NONCE = 0x5EED0001          # journal checksum nonce, fixed so that a case is the same bytes every time
SALTS = (0x5EED0002, 0x5EED0003)  # WAL salts, likewise
JOURNAL_MAGIC = bytes([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7])


class BuildError(RuntimeError):
    """A described case cannot be built as described (say, no change reached the file)."""


def pick_kind(fuzz_seed, index, weights=None):
    """The family of case `index`, from its own random stream: the plain mutation cases keep the
    stream (and so the content) they had before the families existed."""
    weights = weights or KIND_WEIGHTS
    rng = random.Random(f"{fuzz_seed}:{index}:kind")
    return rng.choices(list(weights), list(weights.values()))[0]


def gen_run(seeds, seed):
    return os.path.dirname(seeds[seed])


def victim_source(seeds, seed, victim):
    return seeds[seed + "_r1"] if seed.startswith("gen") and victim == 1 else seeds[seed]


def healthy_source(seeds, seed, victim):
    run = os.path.dirname(seeds[seed]) if seed.startswith("gen") else seeds["healthy"]
    return os.path.join(run, f"rank_{1 - victim}.sqlite")


def be32(b, o):
    return int.from_bytes(b[o:o + 4], "big")


def put32(b, o, v):
    b[o:o + 4] = (v & 0xFFFFFFFF).to_bytes(4, "big")


# --- journals and write-ahead logs (class 2) ------------------------------------------------------

def normalize_journal(data):
    """Rewrites every segment's random checksum nonce (sqlite.org/fileformat2.html 4.1) as NONCE and
    adjusts its page records' checksums (nonce + sum of sampled bytes), so that SQLite would still
    roll it back. A segment not yet synced has a zeroed magic and a record count of 0."""
    off, n, first_page = 0, len(data), None
    while off + 28 <= n:
        head = bytes(data[off:off + 8])
        if head != JOURNAL_MAGIC and head != bytes(8):
            break
        nrec, old, sector, psize = be32(data, off + 8), be32(data, off + 12), be32(data, off + 20), be32(data, off + 24)
        if sector < 32 or sector > 65536 or psize < 512 or psize > 65536 or (first_page and psize != first_page):
            break
        first_page = psize
        put32(data, off + 12, NONCE)
        rec, size = off + sector, psize + 8
        count = (n - rec) // size if nrec in (0, 0xFFFFFFFF) or head != JOURNAL_MAGIC else nrec
        for i in range(count):
            p = rec + i * size
            if p + size > n:
                break
            put32(data, p + 4 + psize, be32(data, p + 4 + psize) - old + NONCE)
        off = rec + count * size
        off = (off + sector - 1) // sector * sector
    return data


def wal_checksum(buf, s0, s1, big):
    order = "big" if big else "little"
    for i in range(0, len(buf), 8):
        s0 = (s0 + int.from_bytes(buf[i:i + 4], order) + s1) & 0xFFFFFFFF
        s1 = (s1 + int.from_bytes(buf[i + 4:i + 8], order) + s0) & 0xFFFFFFFF
    return s0, s1


def normalize_wal(data):
    """Rewrites the WAL's random salts as SALTS and recomputes the header's and every valid frame's
    cumulative checksums (sqlite.org/fileformat2.html 4.1-4.3), so that SQLite still reads it."""
    if len(data) < 32 or be32(data, 0) not in (0x377f0682, 0x377f0683):
        return data
    big, psize = be32(data, 0) & 1, be32(data, 8)
    old = bytes(data[16:24])
    put32(data, 16, SALTS[0])
    put32(data, 20, SALTS[1])
    s0, s1 = wal_checksum(data[0:24], 0, 0, big)
    put32(data, 24, s0)
    put32(data, 28, s1)
    off = 32
    while off + 24 + psize <= len(data) and bytes(data[off + 8:off + 16]) == old:
        put32(data, off + 8, SALTS[0])
        put32(data, off + 12, SALTS[1])
        s0, s1 = wal_checksum(data[off:off + 8], s0, s1, big)
        s0, s1 = wal_checksum(data[off + 24:off + 24 + psize], s0, s1, big)
        put32(data, off + 16, s0)
        put32(data, off + 20, s1)
        off += 24 + psize
    return data


def rewrite(path, fn):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    with open(path, "wb") as f:
        f.write(fn(data))


JOURNAL_VARIANTS = {  # name -> (weight, harmful): harmful ones must be refused, the others read
    "hot": (3, True), "wal": (3, True), "journal_zeroed": (1, False), "journal_unsynced": (1, False),
    "wal_empty": (1, False), "wal_beside_rollback": (1, True),
}


def describe_journal(rng, seeds):
    variant = rng.choices(list(JOURNAL_VARIANTS), [w for w, _ in JOURNAL_VARIANTS.values()])[0]
    seed = victim_seed(rng, seeds)
    victim = rng.choice([0, 1])
    con = sqlite3.connect(f"file:{victim_source(seeds, seed, victim)}?mode=ro", uri=True)
    try:
        have = mutate.schema(con)
    finally:
        con.close()
    if variant == "journal_unsynced":  # a small change: SQLite has written the journal, not the file
        txn = [f"UPDATE {KERNEL} SET start = start + 1 WHERE rowid = (SELECT min(rowid) FROM {KERNEL})"]
    else:
        k = rng.choice([2, 2, 3, 5])
        txn = [f"DELETE FROM {KERNEL} WHERE rowid % {k} = {rng.randrange(k)}"]
        if variant == "hot" or rng.random() < 0.5:
            txn.append(f"UPDATE StringIds SET value = value || printf('%.*c', {rng.choice([20, 300])}, 'z')"
                       f" WHERE rowid % {rng.choice([1, 2, 3])} = 0")
        if rng.random() < 0.5 and "CUPTI_ACTIVITY_KIND_RUNTIME" in have:
            txn.append("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start + 1000")
        if rng.random() < 0.3 and "NVTX_EVENTS" in have:
            txn.append("DELETE FROM NVTX_EVENTS WHERE rowid % 2 = 1")
        # a change whatever the file holds (a tiny export may have no row the others touch)
        txn.append("UPDATE StringIds SET value = value || '~' WHERE id = (SELECT min(id) FROM StringIds)")
    return {"kind": "journal", "variant": variant, "seed": seed, "victim": f"rank_{victim}.sqlite",
            "healthy": f"rank_{1 - victim}.sqlite", "ops": [{"kind": "txn", "sql": txn}],
            "cache_pages": rng.choice([1, 2]) if variant == "hot" else 2000,
            "commits": rng.choice([1, 1, 2, 3]) if variant.startswith("wal") else 1}


def txn_statements(desc):
    return [s for op in desc["ops"] for s in op.get("sql", [])]


def make_journal(seeds, desc, casedir):
    """The victim and what lies beside it, as the variant describes; built in a scratch folder."""
    victim = int(desc["victim"][5])
    src = victim_source(seeds, desc["seed"], victim)
    scratch = casedir.rstrip("/") + ".scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    work, dest = os.path.join(scratch, "work.sqlite"), os.path.join(casedir, desc["victim"])
    shutil.copyfile(src, work)
    shutil.copyfile(healthy_source(seeds, desc["seed"], victim), os.path.join(casedir, desc["healthy"]))
    variant, stmts = desc["variant"], txn_statements(desc)
    con = sqlite3.connect(work, isolation_level=None)
    try:
        if variant in ("hot", "journal_zeroed", "journal_unsynced"):
            con.execute(f"PRAGMA cache_size = {desc.get('cache_pages', 2000)}")
            con.execute("BEGIN")
            for s in stmts:
                con.execute(s)
            # the torn state: what a copy taken now would hold
            shutil.copyfile(work, dest)
            shutil.copyfile(work + "-journal", dest + "-journal")
            con.execute("ROLLBACK")
            rewrite(dest + "-journal", normalize_journal)
            if variant == "journal_zeroed":  # a finished transaction (journal_mode=PERSIST): the file as it was
                shutil.copyfile(src, dest)
                rewrite(dest + "-journal", lambda d: bytes(28) + d[28:])
        else:
            con.execute("PRAGMA journal_mode = WAL")
            con.execute("PRAGMA wal_autocheckpoint = 0")
            per = max(1, len(stmts) // desc.get("commits", 1))
            for i in range(0, len(stmts), per):
                con.execute("BEGIN")
                for s in stmts[i:i + per]:
                    con.execute(s)
                con.execute("COMMIT")
            if variant == "wal_empty":  # everything checkpointed: the -wal is empty
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            shutil.copyfile(work + "-wal", dest + "-wal")
            if variant == "wal_beside_rollback":  # a rollback-journal file with someone's -wal beside it
                shutil.copyfile(src, dest)
            else:
                shutil.copyfile(work, dest)
            rewrite(dest + "-wal", normalize_wal)
    finally:
        con.close()
        shutil.rmtree(scratch, ignore_errors=True)
    check_journal_state(desc, dest)


def check_journal_state(desc, dest):
    """The built state is the one the variant names (else the case would test something else)."""
    variant = desc["variant"]
    with open(dest, "rb") as f:
        head = f.read(100)
    wal_mode = head[18] == 2 and head[19] == 2
    if variant in ("hot", "journal_zeroed", "journal_unsynced"):
        with open(dest + "-journal", "rb") as f:
            hot = f.read(8) == JOURNAL_MAGIC
        ok = hot == (variant == "hot")
    else:
        size = os.path.getsize(dest + "-wal")
        ok = {"wal": wal_mode and size > 0, "wal_empty": wal_mode and size == 0,
              "wal_beside_rollback": not wal_mode and size > 0}[variant]
    if not ok:
        raise BuildError(f"journal case {variant} on {desc['seed']}: the built state is not the intended one")


def victim_seed(rng, seeds):
    names = [n for n in seeds if n in GEN_SEEDS or n.startswith("real:")]
    return rng.choices(names, [{"gen": 4, "gen30": 2, "genbig": 1}.get(n, 1) for n in names])[0]


# --- per-host files with stray processes (class 3) -------------------------------------------------

PER_HOST_VARIANTS = {"kernel_null_pid": 3, "kernel_zero_pid": 2, "helper_kernel": 3, "helper_process": 3,
                     "other_table_pid": 2, "huge_node": 2}
HUGE_NODES = [999999999, 2147483647, 2147483648, 4294967297, 10**18, 99999999999999999999]


def describe_per_host(rng, seeds):
    run = os.path.dirname(seeds["perhost"])
    files = {f: f for f in ("node-00.sqlite", "node-01.sqlite")}
    victim = rng.choice(sorted(files))
    variant = rng.choices(list(PER_HOST_VARIANTS), list(PER_HOST_VARIANTS.values()))[0]
    ops = []
    con = sqlite3.connect(f"file:{os.path.join(run, victim)}?mode=ro", uri=True)
    try:
        if variant != "huge_node":
            ops = per_host_ops(rng, con, variant)
    finally:
        con.close()
    if variant == "huge_node" or rng.random() < 0.2:
        renamed = rng.choice(sorted(files))
        files[renamed] = f"node-{rng.choice(HUGE_NODES)}.sqlite"
    return {"kind": "per_host", "variant": variant, "seed": "perhost", "files": files, "victim": files[victim],
            "victim_source": victim, "healthy": files[[f for f in files if f != victim][0]], "ops": ops}


def new_gpid(rng, con, gpid):
    """A globalPid of a process the file does not hold: pid bits are (globalPid >> 24) & 0xFFFFFF."""
    pids = {(g >> 24) & 0xFFFFFF for (g,) in con.execute(f"SELECT DISTINCT globalPid FROM {KERNEL}") if g}
    pid = rng.choice([rng.randint(2, 0xFFFFFF), rng.randint(2, 70000)])
    while pid in pids:
        pid += 1
    return (gpid & ~(0xFFFFFF << 24)) | (pid << 24), pid


def per_host_ops(rng, con, variant):
    procs = [g for (g,) in con.execute(f"SELECT DISTINCT globalPid FROM {KERNEL} ORDER BY 1") if g]
    gpid = rng.choice(procs)
    rows = [r for (r,) in con.execute(f"SELECT rowid FROM {KERNEL} WHERE globalPid = ?", (gpid,))]
    non_nccl = [r for (r,) in con.execute(
        f"SELECT k.rowid FROM {KERNEL} k JOIN StringIds s ON s.id = k.shortName WHERE k.globalPid = ? "
        "AND s.value NOT LIKE 'nccl%'", (gpid,))]
    if variant in ("kernel_null_pid", "kernel_zero_pid"):
        some = sorted(rng.sample(rows, rng.choice([1, 1, 2, 3, 5])))
        v = "NULL" if variant == "kernel_null_pid" else "0"
        col = "globalPid"
        return [{"kind": variant, "table": KERNEL, "sql": [
            f"UPDATE {KERNEL} SET {col} = {v} WHERE rowid IN ({','.join(map(str, some))})"]}]
    if variant == "other_table_pid":
        cands = [(t, c) for t, c in (("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid"), ("NVTX_EVENTS", "globalTid"),
                                     ("CUPTI_ACTIVITY_KIND_MEMCPY", "globalPid"),
                                     ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "globalPid"))
                 if con.execute(f"SELECT count(*) FROM sqlite_master WHERE name = '{t}'").fetchone()[0]]
        t, c = rng.choice(cands)
        ids = [r for (r,) in con.execute(f"SELECT rowid FROM {t}")]
        some = sorted(rng.sample(ids, min(len(ids), rng.choice([1, 2, 5])))) or [1]
        return [{"kind": variant, "table": t, "sql": [
            f"UPDATE {t} SET {c} = {rng.choice(['NULL', '0'])} WHERE rowid IN ({','.join(map(str, some))})"]}]
    # a helper process: one kernel, or many, that are no NCCL kernel, under a pid the file lacks
    newg, pid = new_gpid(rng, con, gpid)
    top = con.execute(f"SELECT max(rowid) FROM {KERNEL}").fetchone()[0]
    if variant == "helper_kernel":
        pick = f"rowid = {rng.choice(non_nccl)}"
    else:
        m = rng.choice([1, 2, 3])
        pick = f"globalPid = {gpid} AND rowid IN ({','.join(map(str, non_nccl))}) AND rowid % {m} = 0"
    sets = [f"globalPid = {newg}", f"start = start + {rng.choice([0, 1000, 3000000])}",
            f"end = end + {rng.choice([0, 1000, 3000000])}"]
    if rng.random() < 0.5:
        sets.append(f"deviceId = {rng.choice([0, 1, 2, 7])}")
    if rng.random() < 0.5:
        sets.append(f"streamId = {rng.choice([3, 99, 1000])}")
    sql = [f"INSERT INTO {KERNEL} SELECT * FROM {KERNEL} WHERE {pick}"]
    if rng.random() < 0.3:  # a name of its own (StringIds gets a new id)
        sid = con.execute("SELECT max(id) FROM StringIds").fetchone()[0] + 1
        sql.append(f"INSERT INTO StringIds (id, value) VALUES ({sid}, 'helper_{pid}_memset_kernel')")
        sets += [f"shortName = {sid}", f"demangledName = {sid}"]
    sql.append(f"UPDATE {KERNEL} SET {', '.join(sets)} WHERE rowid > {top}")
    if variant == "helper_process" and rng.random() < 0.5:  # its runtime calls too
        rt = "CUPTI_ACTIVITY_KIND_RUNTIME"
        rtop = con.execute(f"SELECT max(rowid) FROM {rt}").fetchone()[0] or 0
        sql += [f"INSERT INTO {rt} SELECT * FROM {rt} WHERE (globalTid >> 24) & 16777215 = {(gpid >> 24) & 0xFFFFFF}"
                f" AND rowid % 4 = 0",
                f"UPDATE {rt} SET globalTid = (globalTid & ~(16777215 << 24)) | ({pid} << 24) WHERE rowid > {rtop}"]
    return [{"kind": variant, "table": KERNEL, "sql": sql}]


def make_per_host(seeds, desc, casedir):
    run = os.path.dirname(seeds["perhost"])
    for src, name in desc["files"].items():
        shutil.copyfile(os.path.join(run, src), os.path.join(casedir, name))
    mutate.apply_ops(os.path.join(casedir, desc["files"][desc["victim_source"]]), desc["ops"])


# --- rank numbers from process ids (class 4) --------------------------------------------------------

RANK_NAME_VARIANTS = {"pids": 3, "pids_layout": 1, "big_rank": 2, "big_rank_layout": 1, "plausible": 2}


def describe_rank_names(rng, seeds):
    variant = rng.choices(list(RANK_NAME_VARIANTS), list(RANK_NAME_VARIANTS.values()))[0]
    if variant.startswith("pids"):  # nsys -o report.%p: Linux pids (pid_max 4194304)
        a = rng.choice([rng.randint(10**6, 4194303), rng.randint(10**5, 10**6), rng.randint(96, 99999)])
        b = rng.randint(a + 1, a + 2000000)
        names = [f"report.{a}.sqlite", f"report.{b}.sqlite"]
    elif variant.startswith("big_rank"):  # rank_0 beside a rank beyond 16 x 2 files + 64
        names = ["rank_0.sqlite", f"rank_{rng.choice([9999999, 96, 97, 1000, rng.randint(96, 2**24)])}.sqlite"]
    else:
        a = rng.choice([0, 0, rng.randint(0, 40)])
        b = rng.choice([24, 95, rng.randint(0, 95)])
        b = b if b != a else a + 1
        names = [f"rank_{a}.sqlite", f"rank_{b}.sqlite"]
    if rng.random() < 0.5:
        names.reverse()
    args = ["--layout", "1x1x2"] if variant.endswith("_layout") else []
    return {"kind": "rank_names", "variant": variant, "seed": rng.choice(GEN_SEEDS), "names": names,
            "healthy": names[1], "run": {"args": args}}


def make_rank_names(seeds, desc, casedir):
    run = gen_run(seeds, desc["seed"])
    for i, name in enumerate(desc["names"]):
        shutil.copyfile(os.path.join(run, f"rank_{i}.sqlite"), os.path.join(casedir, name))


# --- symlinked inputs and outputs (class 5) ----------------------------------------------------------

LINK_VARIANTS = {"out_link_target": 3, "out_dirlink_target": 2, "out_hardlink": 2, "out_is_input_link": 1,
                 "special_out": 4, "normal_links": 2, "normal_dirlink": 1}
SPECIAL_TYPES = ["fifo", "symlink", "dangling_symlink", "chardev", "directory"]


def describe_links(rng, seeds):
    variant = rng.choices(list(LINK_VARIANTS), list(LINK_VARIANTS.values()))[0]
    seed, v = rng.choice(GEN_SEEDS), rng.choice([0, 1])
    files = ["rank_0.sqlite", "rank_1.sqlite"]
    tree = [{"path": f"store/{f}", "type": "file", "from": f} for f in files]
    run = {"dir": "run", "out": "OUT/scan.h5", "summary": "OUT/summary.json"}
    which = rng.choice(["out", "summary"])
    if variant in ("out_dirlink_target", "normal_dirlink"):
        tree.append({"path": "run", "type": "symlink", "target": "store"})
    elif variant == "out_hardlink":
        tree = [{"path": f"run/{f}", "type": "file", "from": f} for f in files]
        tree.append({"path": f"other/copy_of_{files[v]}", "type": "hardlink", "target": f"run/{files[v]}"})
    else:
        tree += [{"path": f"run/{f}", "type": "symlink", "target": f"../store/{f}"} for f in files]
    if variant in ("out_link_target", "out_dirlink_target"):
        run[which] = f"CASE/store/{files[v]}"
    elif variant == "out_hardlink":
        run[which] = f"CASE/other/copy_of_{files[v]}"
    elif variant == "out_is_input_link":
        run[which] = f"CASE/run/{files[v]}"
    elif variant == "special_out":
        special = rng.choice(SPECIAL_TYPES)
        run["outputs"] = {run[which]: {"type": special}}
        if special == "symlink":
            run["outputs"]["OUT/elsewhere"] = {"type": "old"}
    return {"kind": "links", "variant": variant, "seed": seed, "tree": tree, "healthy": files[1 - v], "run": run}


def make_links(seeds, desc, casedir):
    run = gen_run(seeds, desc["seed"])
    for e in desc["tree"]:
        if e["type"] == "file":
            p = os.path.join(casedir, e["path"])
            os.makedirs(os.path.dirname(p), exist_ok=True)
            shutil.copyfile(os.path.join(run, e["from"]), p)
    make_tree(desc, casedir)


def make_tree(desc, casedir):
    """The entries that are no plain file: symlinks, hard links (also when a corpus replay restored
    the files from their copies)."""
    for e in desc.get("tree", []):
        p = os.path.join(casedir, e["path"])
        if e["type"] == "file":
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if os.path.lexists(p):
            os.remove(p)
        if e["type"] == "symlink":
            os.symlink(e["target"], p)
        elif e["type"] == "hardlink":
            os.link(os.path.join(casedir, e["target"]), p)


def make_output(path, spec):
    """Creates what lies at an output path before the run; returns why it cannot be, or ''."""
    t = spec["type"]
    if t == "old":
        with open(path, "w") as f:
            f.write("OLD\n")
    elif t == "fifo":
        os.mkfifo(path)
    elif t == "symlink":
        os.symlink("elsewhere", path)
    elif t == "dangling_symlink":
        os.symlink("missing.h5", path)
    elif t == "directory":
        os.makedirs(path)
    elif t == "chardev":
        try:  # the numbers of /dev/null: harmless if written
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except (OSError, AttributeError) as e:
            return f"cannot make a character device ({e})"
    return ""


# --- faults during the write (class 6) ----------------------------------------------------------------

def describe_write_fault(rng, seeds):
    seed = rng.choice(GEN_SEEDS)
    # the first writes (creating the file: MPI-IO's helper files too) are where rarer paths lie
    after, err = rng.choice([rng.randint(1, 4), rng.randint(1, 200), rng.randint(1, 200)]), rng.choice([28, 5, 122])
    mpi = 2 if rng.random() < 0.2 else 0
    old = rng.random() < 0.8
    run = {"env": {"LD_PRELOAD": "FAULT_LIB", "SS_FAULT_PATH": ".tmp-", "SS_FAULT_AFTER": str(after),
                   "SS_FAULT_ERRNO": str(err)}, "mpi": mpi, "args": ["--timeout", "20"] if mpi else []}
    if old:
        run["outputs"] = {"OUT/scan.h5": {"type": "old"}, "OUT/summary.json": {"type": "old"}}
    return {"kind": "write_fault", "variant": "mpirun" if mpi else "one_process", "seed": seed, "after": after, "errno": err, "healthy": "rank_1.sqlite", "run": run}


def make_plain(seeds, desc, casedir):
    run = gen_run(seeds, desc["seed"])
    for f in ("rank_0.sqlite", "rank_1.sqlite"):
        shutil.copyfile(os.path.join(run, f), os.path.join(casedir, f))


# --- dispatch -------------------------------------------------------------------------------------

DESCRIBE = {"journal": describe_journal, "per_host": describe_per_host, "rank_names": describe_rank_names,
            "links": describe_links, "write_fault": describe_write_fault}
MAKE = {"journal": make_journal, "per_host": make_per_host, "rank_names": make_rank_names, "links": make_links,
        "write_fault": make_plain}
