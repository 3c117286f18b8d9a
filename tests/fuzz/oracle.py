"""Runs straggler-scan on one fuzz case and checks its promises; names a failure by a stable signature."""
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import signal
import stat
import subprocess
import time

import families

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAN_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "ERROR: UndefinedBehaviorSanitizer",
               "AddressSanitizer:DEADLYSIGNAL", "ERROR: ThreadSanitizer")
SHM = "/dev/shm"
MEM_LIMIT = 4 << 30  # a case may use 4 GiB (several sessions share the machine)
_sanitized = {}
# Case families of other fuzzers (fuzz_kineto.py): kind -> function(desc) giving its expectations as
# expectations() does; their "check" entry, (outdir, stderr) -> problems, judges an exit 0.
EXTRA_KINDS = {}


def is_sanitized(binary):
    if binary not in _sanitized:
        with open(binary, "rb") as f:
            _sanitized[binary] = b"__asan_init" in f.read()
    return _sanitized[binary]


def child_env(binary):
    env = dict(os.environ)
    if is_sanitized(binary):
        # What scripts/env.sh sanitizer_env sets, when the caller did not; plus a memory cap that ASan
        # enforces itself (an address-space limit does not work with its shadow memory).
        env.setdefault("ASAN_OPTIONS", "halt_on_error=1:exitcode=99:detect_leaks=1:print_stacktrace=1")
        env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1:exitcode=99")
        env.setdefault("LSAN_OPTIONS", f"suppressions={ROOT}/scripts/lsan.supp:print_suppressions=0:exitcode=99")
        # Full allocation stacks: leaks then show their project frame (and suppressions match).
        env["ASAN_OPTIONS"] += f":fast_unwind_on_malloc=0:hard_rss_limit_mb={MEM_LIMIT >> 20}:malloc_limit_mb={MEM_LIMIT >> 20}"
    return env


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))


def tree_state(d):
    """Every entry under d by relative path: a plain file by its content's hash, a symbolic link by
    its target (never followed), a FIFO or device by its type (never opened)."""
    state = {}
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                state[os.path.relpath(p, d)] = ("symlink", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    state[os.path.relpath(p, d)] = ("file", hashlib.sha1(f.read()).hexdigest())
            elif stat.S_ISDIR(st.st_mode):
                state[os.path.relpath(p, d)] = ("directory",)
            elif stat.S_ISFIFO(st.st_mode):
                state[os.path.relpath(p, d)] = ("fifo",)
            elif stat.S_ISCHR(st.st_mode):
                state[os.path.relpath(p, d)] = ("chardev", st.st_rdev)
            else:
                state[os.path.relpath(p, d)] = ("other", st.st_mode)
    return state


def file_state(d):
    return {k: v[-1] for k, v in tree_state(d).items()}


def expectations(desc):
    """What straggler-scan must do with a described case, beyond the promises every case has (no
    sanitizer report, no signal, no hang, no temporary left, inputs unchanged, at most one line per
    failing file):
      rc        the exit statuses allowed (1 needs a line with "cannot write")
      line      a phrase (regex) that exactly one stderr line must hold on a failing run (rc != 0)
      ok_line   a phrase (regex) that a line may hold without naming a file
      refused   on exit 0, (file, phrase): ranks_failed lists exactly this file, for this reason,
                and stderr has exactly one line naming it, holding the phrase
      left_out  on exit 0, per-host strays: (file, phrase, at least, at most) entries of ranks_failed
      ranks     on exit 0, the ranks analysed (summary "ranks") and, with h5py, /ranks/rank
      max_secs  a bound on the run time
    """
    kind, variant = desc.get("kind", "mutate"), desc.get("variant", "")
    if kind in EXTRA_KINDS:
        return EXTRA_KINDS[kind](desc)
    if kind in ("mutate", "extreme_ids"):
        return {"rc": {0, 1}}
    if kind == "journal":
        if families.JOURNAL_VARIANTS[variant][1]:
            phrase = "unfinished write" if variant == "hot" else "write-ahead log"
            return {"rc": {0}, "refused": (desc["victim"], phrase), "ranks": [None]}
        return {"rc": {0}, "ranks": [None, None]}
    if kind == "per_host":
        strays = {"huge_node": (0, 0), "other_table_pid": (0, 1)}.get(variant, (1, 1))
        return {"rc": {0}, "left_out": (desc["victim"], "left out") + strays, "ranks": [0, 1, 2, 3]}
    if kind == "rank_names":
        if variant == "plausible":
            return {"rc": {0}, "ranks": sorted(int(re.search(r"(\d+)", n).group(1)) for n in desc["names"])}
        if variant.endswith("_layout"):
            return {"rc": {2}, "line": r"layout|rank", "ok_line": r"--layout|rank", "max_secs": 10}
        if variant == "pids":  # no rank anywhere but the pids: numbered by host, then pid (a warning says so)
            return {"rc": {0}, "ranks": [0, 1], "max_secs": 10}
        return {"rc": {2}, "line": "process ids", "ok_line": "process ids", "max_secs": 10}
    if kind == "links":
        if variant.startswith("normal"):
            return {"rc": {0}, "ranks": [0, 1]}
        if variant == "special_out":
            t = list(desc["run"]["outputs"].values())[0]["type"]
            phrase = "is a directory|which writing would replace" if t == "directory" else "which writing would replace"
            return {"rc": {2}, "line": phrase, "ok_line": phrase}
        phrase = "would overwrite an input"
        if variant == "out_is_input_link":  # the output path is itself a link
            phrase += "|which writing would replace"
        if variant == "out_dirlink_target":  # the output lies in the (linked) input folder: refused first
            phrase += "|inside the input directory"
        return {"rc": {2}, "line": phrase, "ok_line": phrase}
    if kind == "write_fault":
        return {"rc": {0, 1}, "line": "cannot write", "ranks": [0, 1], "mpi": desc["run"].get("mpi", 0)}
    raise ValueError(f"unknown case kind {kind}")


def resolve(p, casedir, outdir):
    if p.startswith("OUT/"):
        return os.path.join(outdir, p[4:])
    if p.startswith("CASE/"):
        return os.path.join(casedir, p[5:])
    return p


def command(scan, casedir, outdir, desc, tools):
    """The command line and environment of a described case; a reason instead when it cannot run here."""
    run = desc.get("run", {})
    out = resolve(run.get("out", "OUT/scan.h5"), casedir, outdir)
    summary = resolve(run.get("summary", "OUT/summary.json"), casedir, outdir)
    cmd = [scan, os.path.normpath(os.path.join(casedir, run.get("dir", "."))), "-o", out, "--summary", summary]
    cmd += run.get("args", [])
    env, extra = child_env(scan), {}
    for k, v in run.get("env", {}).items():
        if v == "FAULT_LIB":
            if not tools.get("fault_lib"):
                return None, None, "no libwrite_faults.so (--fault-lib)"
            v = tools["fault_lib"]
            if is_sanitized(scan):  # ASan wants its runtime first in the library list
                env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
        extra[k] = v
    env.update(extra)
    if run.get("mpi"):
        if not tools.get("mpirun"):
            return None, None, "no mpirun (or --no-mpi)"
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        pre = [tools["mpirun"], "-n", str(run["mpi"]), "--oversubscribe"]
        for k in list(extra) + [k for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS") if k in env]:
            pre += ["-x", k]  # mpirun passes on only what -x names
        cmd = pre + cmd
    return cmd, env, ""


def run_case(scan, casedir, healthy, timeout, outdir, desc=None, tools=None):
    desc = desc or {"healthy": healthy}
    tools = tools or {}
    expect = expectations(desc)
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    for path, spec in desc.get("run", {}).get("outputs", {}).items():
        why = families.make_output(resolve(path, casedir, outdir), spec)
        if why:
            return skipped(why)
    cmd, env, why = command(scan, casedir, outdir, desc, tools)
    if why:
        return skipped(why)
    mpi = expect.get("mpi", 0)
    if mpi:  # its own --timeout 20 ends a stuck job with exit 1; a hang past this is a finding
        timeout = max(timeout, 60)
    before, before_out = tree_state(casedir), tree_state(outdir)
    shm = set(os.listdir(SHM)) if mpi and os.path.isdir(SHM) else set()
    t0 = time.time()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         start_new_session=True, preexec_fn=None if is_sanitized(scan) else limit_memory)
    hung = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    secs = time.time() - t0
    out, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    rc = p.returncode
    if mpi and rc is not None and rc > 128:  # mpirun reports a process killed by signal N as 128 + N
        rc = -(rc - 128)
    problems, kind = [], None
    san = [l for l in err.splitlines() if any(m in l for m in SAN_MARKERS)]
    tool_err = "\n".join(l for l in err.splitlines() if l.startswith("straggler-scan")) if mpi else err
    if hung:
        problems.append(f"hang: no exit within {timeout:.0f} s")
        kind = "hang"
    elif san:
        problems.append("sanitizer: " + san[0].strip())
        kind = "sanitizer"
    elif rc < 0:
        problems.append(f"killed by signal {-rc}" + (" (under mpirun)" if mpi else ""))
        kind = f"signal {-rc}"
    elif rc == 1 and "cannot write" not in err and "(--timeout)" in err:  # the liveness watchdog ended it
        problems.append("exit 1 from the --timeout watchdog, not 'cannot write' (after %.0f s): " % (time.time() - t0) +
                        [l for l in tool_err.splitlines() if "(--timeout)" in l][0])
        kind = "watchdog"
    elif rc == 1 and "cannot write" not in err:
        problems.append("exit 1: " + (tool_err.strip().splitlines() or ["(no message)"])[-1])
        kind = "exit1"
    elif rc not in (0, 1, 2):
        problems.append(f"exit status {rc}")
        kind = f"exit{rc}"
    names = sorted({os.path.basename(k) for k in before} | {os.path.basename(k) for k in before_out})
    if not hung and not san:
        problems += check_stderr(tool_err, names, expect.get("ok_line"))
    after_out = tree_state(outdir)
    tmp = [f for f in after_out if re.match(r"\..*\.tmp-", os.path.basename(f))]
    tmp += [os.path.join(casedir, f) for f in tree_state(casedir) if re.match(r"\..*\.tmp-", os.path.basename(f))]
    if tmp:
        problems.append("temp file left: " + ", ".join(tmp))
    if rc != 0 and not hung and not san:
        changed = sorted(f for f in set(after_out) | set(before_out)
                         if after_out.get(f) != before_out.get(f) and f not in tmp)
        if changed and not before_out:
            problems.append(f"partial output on exit {rc}: " + ", ".join(changed))
        elif changed:
            problems.append(f"outputs changed on exit {rc}: " + ", ".join(
                f"{f} ({before_out.get(f, ('absent',))[0]} -> {after_out.get(f, ('absent',))[0]})" for f in changed))
    if not hung and not san and rc >= 0:
        problems += check_expectations(expect, desc, rc, tool_err, outdir, healthy, secs, before_out)
    after = tree_state(casedir)
    if after != before:
        problems.append("input directory changed: " + ", ".join(
            sorted(f for f in set(before) | set(after) if before.get(f) != after.get(f)))[:300])
    outcome = "hang" if hung else f"exit {rc}"
    if rc == 1 and "cannot write" in err:
        outcome += ", cannot write"
    if rc == 0:
        outcome += outcome_note(desc, outdir)
    res = {"ok": not problems, "outcome": outcome, "problems": problems, "rc": rc, "stderr": err, "stdout": out[-3000:],
           "secs": secs, "cmd": " ".join(shlex.quote(c) for c in [f"{k}={v}" for k, v in sorted(env.items())
                                                                   if k.startswith(("SS_", "LD_PRELOAD", "OMPI_"))] + cmd)}
    res["signature"] = signature(kind, problems, err, desc) if problems else ""
    if mpi:  # a crashed MPI-IO open leaves its named semaphore (sem.OMPIO_.scan.h5.tmp-HOST-PID): not ours to keep
        res["litter"] = [f for f in set(os.listdir(SHM)) - shm if f.startswith("sem.OMPIO_.") and ".tmp-" in f]
        for f in res["litter"]:
            os.remove(os.path.join(SHM, f))
    shutil.rmtree(outdir, ignore_errors=True)
    return res


def skipped(why):
    return {"ok": True, "skipped": why, "outcome": "skipped: " + why, "problems": [], "rc": None, "stderr": "",
            "stdout": "", "secs": 0, "signature": ""}


def check_expectations(expect, desc, rc, err, outdir, healthy, secs, before_out):
    problems = []
    if rc not in expect["rc"]:
        if rc == 2 and desc.get("kind", "mutate") in ("mutate", "extreme_ids"):
            return [f"exit 2 although {healthy} is healthy"]
        first = (err.strip().splitlines() or ["(no message)"])[0][:160]
        problems.append(f"exit {rc}, expected {' or '.join(map(str, sorted(expect['rc'])))}: {first}")
        return problems
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith("straggler-scan: warning:")]
    if rc != 0 and expect.get("line"):
        n = sum(1 for l in lines if re.search(expect["line"], l))
        if n != 1 and not (expect.get("mpi") and n > 1):  # under mpirun each process may say it
            problems.append(f"exit {rc}: {n} stderr lines say '{expect['line']}', expected 1")
    if expect.get("max_secs") and secs > expect["max_secs"]:
        problems.append(f"slow: {secs:.0f} s (bound {expect['max_secs']} s)")
    if rc == 0:
        if "check" in expect:
            return problems + expect["check"](outdir, err)
        if desc.get("kind", "mutate") in ("mutate", "extreme_ids"):
            return problems + check_summary(outdir, healthy)
        problems += check_run(expect, outdir, lines, before_out)
    return problems


def check_run(expect, outdir, lines, before_out):
    """Exit 0 of a family case: both outputs new, the ranks expected, the refused or left-out files."""
    problems = []
    for f in ("scan.h5", "summary.json"):
        if not os.path.isfile(os.path.join(outdir, f)):
            return [f"exit 0 without {f}"]
    after = tree_state(outdir)
    for f in before_out:
        if before_out[f] == after.get(f) and before_out[f][0] == "file" and f in ("scan.h5", "summary.json"):
            problems.append(f"exit 0, but {f} still holds what was there before")
    try:
        with open(os.path.join(outdir, "summary.json")) as f:
            s = json.load(f)
    except (OSError, ValueError) as e:
        return problems + [f"exit 0 without a readable summary.json ({type(e).__name__})"]
    failed = s.get("ranks_failed", [])
    want = expect.get("ranks")
    if want is not None and s.get("ranks") != len(want):
        problems.append(f"summary: {s.get('ranks')} ranks, expected {len(want)} "
                        f"(failed: {[os.path.basename(str(r.get('file'))) + ': ' + str(r.get('error'))[:80] for r in failed]})")
    elif want and None not in want:
        got = h5_ranks(os.path.join(outdir, "scan.h5"))
        if got is not None and got != want:
            problems.append(f"/ranks/rank is {got}, expected {want}")
    if "refused" in expect:
        victim, phrase = expect["refused"]
        mine = [r for r in failed if os.path.basename(str(r.get("file"))) == victim]
        if len(failed) != 1 or not mine or phrase not in str(mine[0].get("error")):
            problems.append(f"ranks_failed is {[str(r.get('error'))[:100] for r in failed]}, expected {victim}: {phrase}")
        said = [l for l in lines if victim in l]
        if len(said) != 1 or phrase not in said[0]:
            problems.append(f"stderr: {len(said)} lines name {victim}, expected one saying '{phrase}'")
    elif "left_out" in expect:
        victim, phrase, least, most = expect["left_out"]
        others = [r for r in failed if os.path.basename(str(r.get("file"))) != victim or phrase not in str(r.get("error"))]
        mine = len(failed) - len(others)
        if others:
            problems.append(f"ranks_failed holds more than strays: {str(others[0].get('error'))[:160]}")
        if not least <= mine <= most:
            problems.append(f"{mine} processes of {victim} {phrase}, expected {least}-{most}")
        said = [l for l in lines if victim in l]
        if len(said) > most or (least and not any(phrase in l for l in said)):
            problems.append(f"stderr: {len(said)} lines name {victim}, expected {least}-{most} saying '{phrase}'")
    elif failed:  # every file read
        problems.append(f"ranks_failed: {[str(r.get('error'))[:100] for r in failed]}")
    return problems


def h5_ranks(path):
    """/ranks/rank of the HDF5 output, sorted; None without h5py."""
    try:
        import h5py
    except ImportError:
        return None
    try:
        with h5py.File(path, "r") as f:
            return sorted(int(r) for r in f["ranks/rank"][:])
    except (OSError, KeyError, ValueError) as e:
        return [f"unreadable: {e}"]


def outcome_note(desc, outdir):
    kind = desc.get("kind", "mutate")
    note = problems_note(outdir)
    if kind in ("mutate", "extreme_ids"):
        return ", victim skipped" if note else ", both analysed"
    if kind == "write_fault":
        return ", no fault reached"
    if kind == "per_host":
        return ", stray left out" if note else ", all ranks"
    return ", victim refused" if note else ", all analysed"


def problems_note(outdir):
    """Whether the summary lists a failed file (the mutated one when the oracle passed)."""
    try:
        with open(os.path.join(outdir, "summary.json")) as f:
            return "victim skipped" if json.load(f).get("ranks_failed") else ""
    except (OSError, ValueError):
        return ""


def check_stderr(err, files, ok_line=None):
    """At most one line per failing file, naming it; warnings aside; one closing line on exit 2."""
    problems, per_file, warnings = [], {}, 0
    for line in err.splitlines():
        if not line.strip():
            continue
        if line.startswith("straggler-scan: warning:"):
            warnings += 1
            continue
        named = [f for f in files if f in line]
        if named:
            per_file[named[0]] = per_file.get(named[0], 0) + 1
        elif not re.search(r"no usable profile|nothing written|internal error|cannot write", line) and \
                not (ok_line and re.search(ok_line, line)):
            problems.append("stderr line naming no file: " + line[:200])
    problems += [f"stderr: {n} lines for {f}" for f, n in per_file.items() if n > 1]
    if warnings > 20:
        problems.append(f"stderr: {warnings} warning lines")
    if len(err) > 20000:
        problems.append(f"stderr: {len(err)} bytes")
    return problems


def check_summary(outdir, healthy):
    if not os.path.isfile(os.path.join(outdir, "scan.h5")):
        return ["exit 0 without scan.h5"]
    try:
        with open(os.path.join(outdir, "summary.json")) as f:
            s = json.load(f)
    except (OSError, ValueError) as e:
        return [f"exit 0 without a readable summary.json ({type(e).__name__})"]
    failed = [r.get("file", "") for r in s.get("ranks_failed", [])]
    bad = [r for r in s.get("ranks_failed", []) if os.path.basename(str(r.get("file", ""))) == healthy]
    if bad:
        return [f"healthy {healthy} not analysed: {bad[0].get('error', '')[:200]}"]
    if not s.get("ranks"):
        return [f"summary: no rank analysed (failed: {failed})"]
    return []


def signature(kind, problems, err, desc=None):
    """Stable name of a failure: its kind plus, for sanitizer reports, the error type and the first
    frame in project code (function and file, not line: lines move). Failures of a case family other
    than the plain mutations are prefixed with it (and its variant)."""
    family = (desc or {}).get("kind", "mutate")
    if family not in ("mutate", "extreme_ids"):
        variant = desc.get("variant", "")
        return f"[{family}{':' + variant if variant else ''}] " + signature(kind, problems, err)
    if kind == "sanitizer":
        m = re.search(r"(?:ERROR: \w+Sanitizer: |runtime error: )([\w-]+(?: [\w-]+){0,3})", err)
        what = m.group(1) if m else "report"
        frame = ""
        for fm in re.finditer(r"#\d+ 0x[0-9a-f]+ in (.+?) (/\S+?):(\d+)", err):
            if "/work/" in fm.group(2) and "/usr/" not in fm.group(2):
                frame = f"{os.path.basename(fm.group(2))}:{short_fn(fm.group(1))}"
                break
        if not frame:
            rm = re.search(r"(/\S+?\.(?:cpp|hpp)):\d+:\d+: runtime error", err)
            frame = os.path.basename(rm.group(1)) if rm else "?"
        return f"{what} @ {frame}"
    msg = problems[0]
    msg = re.sub(r"(rank_|node-|report\.)\d+\.sqlite", "FILE", msg)
    msg = re.sub(r"/\S+", "PATH", msg)
    msg = re.sub(r"\d+", "N", msg)
    return (kind + ": " if kind and kind not in msg else "") + msg[:120]


def short_fn(fn):
    fn = re.sub(r"\(.*", "", fn)  # drop arguments
    fn = re.sub(r"<.*>", "", fn)
    return fn.split("::")[-1] or fn
