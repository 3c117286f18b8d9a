"""Runs straggler-scan on one fuzz case and checks its promises; names a failure by a stable signature."""
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAN_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "ERROR: UndefinedBehaviorSanitizer",
               "AddressSanitizer:DEADLYSIGNAL", "ERROR: ThreadSanitizer")
MEM_LIMIT = 4 << 30  # a case may use 4 GiB (several sessions share the machine)
_sanitized = {}


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


def file_state(d):
    return {f: hashlib.sha1(open(os.path.join(d, f), "rb").read()).hexdigest() for f in sorted(os.listdir(d))}


def run_case(scan, casedir, healthy, timeout, outdir):
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    before = file_state(casedir)
    cmd = [scan, casedir, "-o", os.path.join(outdir, "scan.h5"), "--summary", os.path.join(outdir, "summary.json")]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(scan),
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
    problems, kind = [], None
    files = sorted(os.listdir(outdir))
    san = [l for l in err.splitlines() if any(m in l for m in SAN_MARKERS)]
    if hung:
        problems.append(f"hang: no exit within {timeout:.0f} s")
        kind = "hang"
    elif san:
        problems.append("sanitizer: " + san[0].strip())
        kind = "sanitizer"
    elif rc < 0:
        problems.append(f"killed by signal {-rc}")
        kind = f"signal {-rc}"
    elif rc == 1 and "cannot write" not in err:
        problems.append("exit 1: " + (err.strip().splitlines() or ["(no message)"])[-1])
        kind = "exit1"
    elif rc not in (0, 1, 2):
        problems.append(f"exit status {rc}")
        kind = f"exit{rc}"
    if not hung and not san:
        problems += check_stderr(err, before)
    tmp = [f for f in files if re.match(r"\..*\.tmp-", f)]
    if tmp:
        problems.append("temp file left: " + ", ".join(tmp))
    if rc != 0 and not hung and not san and [f for f in files if f not in tmp]:
        problems.append(f"partial output on exit {rc}: " + ", ".join(f for f in files if f not in tmp))
    if rc == 0:
        problems += check_summary(outdir, healthy)
    elif rc == 2 and not hung:
        problems.append(f"exit 2 although {healthy} is healthy")
    if file_state(casedir) != before:
        problems.append("input directory changed")
    outcome = "hang" if hung else f"exit {rc}"
    if rc == 0:
        outcome += ", victim skipped" if "victim skipped" in problems_note(outdir) else ", both analysed"
    res = {"ok": not problems, "outcome": outcome, "problems": problems, "rc": rc, "stderr": err, "stdout": out[-3000:], "secs": secs}
    res["signature"] = signature(kind, problems, err) if problems else ""
    shutil.rmtree(outdir, ignore_errors=True)
    return res


def problems_note(outdir):
    """Whether the summary lists a failed file (the mutated one when the oracle passed)."""
    try:
        with open(os.path.join(outdir, "summary.json")) as f:
            return "victim skipped" if json.load(f).get("ranks_failed") else ""
    except (OSError, ValueError):
        return ""


def check_stderr(err, files):
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
        elif not re.search(r"no usable profile|nothing written|internal error|cannot write", line):
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


def signature(kind, problems, err):
    """Stable name of a failure: its kind plus, for sanitizer reports, the error type and the first
    frame in project code (function and file, not line: lines move)."""
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
    msg = re.sub(r"rank_\d+\.sqlite", "FILE", msg)
    msg = re.sub(r"/\S+", "PATH", msg)
    msg = re.sub(r"\d+", "N", msg)
    return (kind + ": " if kind and kind not in msg else "") + msg[:120]


def short_fn(fn):
    fn = re.sub(r"\(.*", "", fn)  # drop arguments
    fn = re.sub(r"<.*>", "", fn)
    return fn.split("::")[-1] or fn
