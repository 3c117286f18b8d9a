#!/usr/bin/env bash
# scripts/scan_file.py, the one way the Python scripts open a scan (docs/hdf5-layout.md, "Reading a
# scan someone sent you: what is refused"): report_html.py and every plot script refuse a hostile
# file with exit 2 and one line on stderr naming the file, in bounded memory (ulimit -v) and time,
# and print nothing of a file outside it.
#  (a) the reproducers of SS_SHARED_DIR/data/repro3 (H_*), as shipped and with their root
#      command_line rewritten as the writer writes it (the probe's was a variable-length string), so
#      that each one's own defect is what is refused;
#  (b) hostile variants of a fresh scan, made here with h5py: external storage, a virtual dataset,
#      soft and external links, unwritten datasets, compression bombs, variable-length and oversized
#      strings, 2^40 elements, wrong types and shapes, a column of the wrong length, ranks out of
#      range or order, bad ragged offsets, a named datatype, a FIFO, a directory; and two files that
#      are fine: a hard-link cycle, and every string of the file hostile (terminal escapes, markup,
#      bytes that are not UTF-8, mathtext), which must come out printable;
#  (c) P_plot_mathtext_host's recipe: a host named `$\sqrt{$` at 128 ranks plots;
#  (d) every script on a normal scan.
# Usage: SS_BUILD=/path/to/build tests/test_scan_file.sh
#   (or STRAGGLER_SIM / STRAGGLER_SCAN naming the binaries; SS_SHARED_DIR: default ../shared)
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=${SS_PYTHON:-/usr/bin/python3}  # needs h5py, numpy, matplotlib, plotly
SIM=${STRAGGLER_SIM:-${SS_BUILD:+$SS_BUILD/src/sim/straggler-sim}}
SCAN=${STRAGGLER_SCAN:-${SS_BUILD:+$SS_BUILD/src/straggler-scan}}
[[ -n "$SIM" && -n "$SCAN" ]] || { echo "set SS_BUILD to the build directory" >&2; exit 1; }
REPRO=${SS_SHARED_DIR:-$SRC/../shared}/data/repro3
S="$SRC/scripts"
MEM_KB=4000000   # ulimit -v for every script run on a hostile file
SECONDS_MAX=20   # and its time limit
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MPLBACKEND=Agg

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# run SCRIPT FILE OUT: the script on FILE under the memory and time limits; $TMP/run.{out,err}, $rc.
run() {
  local script=$1 file=$2 out=$3
  rc=0
  ( ulimit -v $MEM_KB; exec timeout $SECONDS_MAX "$PY" "$S/$script" "$file" "$out" ) >"$TMP/run.out" 2>"$TMP/run.err" || rc=$?
}

# Lines of /etc/passwd, which must never come out of a script (nor the canary file's, below).
grep -v '^$' /etc/passwd >"$TMP/secret-lines" || true

# start TAG SCRIPT FILE: run in the background, into $TMP/TAG.{out,err,rc} (output $TMP/TAG.output).
start() {
  local tag=$1 script=$2 file=$3
  ( rc=0
    ( ulimit -v $MEM_KB; exec timeout $SECONDS_MAX "$PY" "$S/$script" "$file" "$TMP/$tag.output" ) \
      >"$TMP/$tag.out" 2>"$TMP/$tag.err" || rc=$?
    echo $rc >"$TMP/$tag.rc" ) &
}

# was_refused TAG SCRIPT FILE [OBJECT]: after start and wait: exit 2, one stderr line naming the file
# (and OBJECT), nothing of a file outside the scan in any output, no output written.
was_refused() {
  local tag=$1 script=$2 file=$3 object=${4:-}
  local what="$script $(basename "$file")" rc out="$TMP/$1.out" err="$TMP/$1.err"
  rc=$(cat "$TMP/$tag.rc")
  [[ $rc -ne 124 ]] || fail "$what: still running after ${SECONDS_MAX}s"
  [[ $rc -eq 2 ]] || { cat "$err" >&2; fail "$what: exit $rc, want 2"; }
  [[ $(wc -l <"$err") -eq 1 ]] || { cat "$err" >&2; fail "$what: stderr is not one line"; }
  grep -qF -- "$file: cannot read the scan back: " "$err" || { cat "$err" >&2; fail "$what: the line does not name the file"; }
  [[ -z "$object" ]] || grep -qF -- "back: $object" "$err" || { cat "$err" >&2; fail "$what: the line does not name $object"; }
  [[ ! -e "$TMP/$tag.output" ]] || fail "$what: an output was written for a refused file"
  if grep -qF -f "$TMP/secret-lines" "$out" "$err"; then fail "$what: a line of /etc/passwd came out"; fi
  if grep -qF CANARY "$out" "$err"; then fail "$what: the canary file came out"; fi
}

# refused SCRIPT FILE [OBJECT]: one script, refusing one file.
refused() {
  start one "$1" "$2"
  wait
  was_refused one "$@"
}

SCRIPTS=(report_html.py plot_stragglers.py plot_findings.py plot_pipeline.py plot_scaling.py plot_waterfall.py plot_compare.py)

# ---------------------------------------------------------------- (a) the reproducers
if [[ -d "$REPRO" ]]; then
  n=0
  for h5 in "$REPRO"/H_*/*.h5; do  # the seven scripts at once on each
    for i in "${!SCRIPTS[@]}"; do start "a$i" "${SCRIPTS[$i]}" "$h5"; done
    wait
    for i in "${!SCRIPTS[@]}"; do was_refused "a$i" "${SCRIPTS[$i]}" "$h5"; done
    n=$((n + 1))
  done
  (( n >= 6 )) || fail "$n reproducers in $REPRO/H_*, want 6"
  # The same files with the root command_line as the writer writes it (fixed-length): each is then
  # refused for its own defect (clock_reason_esc.h5 has none: its escapes are made printable).
  mkdir "$TMP/repaired"
  cp "$REPRO"/H_*/*.h5 "$TMP/repaired/" && chmod u+w "$TMP/repaired"/*.h5
  "$PY" - "$TMP/repaired"/*.h5 <<'EOF' || fail "could not repair the reproducers"
import sys, h5py, numpy as np
for p in sys.argv[1:]:
    with h5py.File(p, "r+") as f:
        f.attrs["command_line"] = np.bytes_(f.attrs["command_line"].encode())
EOF
  R="$TMP/repaired"
  declare -A DEFECT=([ext_passwd]="/ranks/host: stores its values outside the file"
    [fill8g]="/ranks/busy_ms: not written" [gzbomb]="/ranks/busy_ms: 134,217,728 rows"
    [strovf]="/ranks/host: 16777216-byte strings" [rank_max]="/ranks/rank: rank 2147483647")
  for name in "${!DEFECT[@]}"; do start "r-$name" report_html.py "$R/$name.h5"; done
  wait
  for name in "${!DEFECT[@]}"; do was_refused "r-$name" report_html.py "$R/$name.h5" "${DEFECT[$name]}"; done
  rc=0; "$PY" "$S/report_html.py" "$R/clock_reason_esc.h5" "$TMP/esc.html" --scan "$SCAN" >/dev/null 2>"$TMP/run.err" || rc=$?
  [[ $rc -eq 0 ]] || { cat "$TMP/run.err" >&2; fail "clock_reason_esc.h5: exit $rc"; }
  if LC_ALL=C grep -q $'\x1b' "$TMP/esc.html"; then fail "clock_reason_esc.h5: a raw escape in the page"; fi
  echo "ok: $n reproducers refused by all ${#SCRIPTS[@]} scripts; each for its own defect once repaired (${SECONDS}s)"
else
  echo "skipped (a): no reproducers at $REPRO"
fi

# ---------------------------------------------------------------- (b) hostile variants
"$SIM" "$TMP/run8" --layout 2x2x2 --hosts 2 --iterations 6 --seed 3 --fault slow_gpu:3:2:1.4 >"$TMP/sim.log" 2>&1 ||
  { cat "$TMP/sim.log" >&2; fail "straggler-sim"; }
"$SCAN" "$TMP/run8" -q -o "$TMP/scan.h5" >"$TMP/scan.log" 2>&1 || { cat "$TMP/scan.log" >&2; fail "straggler-scan"; }
"$SIM" "$TMP/healthy8" --layout 2x2x2 --hosts 2 --iterations 6 --seed 3 >/dev/null 2>&1 || fail "straggler-sim healthy"
"$SCAN" "$TMP/healthy8" -q -o "$TMP/healthy.h5" >/dev/null 2>&1 || fail "straggler-scan healthy"
"$SCAN" compare "$TMP/healthy.h5" "$TMP/scan.h5" -q -o "$TMP/compare.h5" >/dev/null 2>&1 || fail "straggler-scan compare"
mkdir "$TMP/v"
printf 'CANARY line %d: a file outside the scan\n' $(seq 1 64) >"$TMP/canary.txt"
"$PY" - "$TMP/scan.h5" "$TMP/compare.h5" "$TMP/v" "$TMP/canary.txt" <<'EOF' || fail "could not write the variants"
import os, shutil, sys, zlib
import h5py, numpy as np
base, compare, out, canary = sys.argv[1:5]
canary_h5 = os.path.join(out, "canary-source.h5")
with h5py.File(canary_h5, "w") as f:
    f["x"] = np.array([b"CANARY %d" % i for i in range(64)], dtype="S16")


def variant(name, edit, source=base):
    path = os.path.join(out, name + ".h5")
    shutil.copy(source, path)
    with h5py.File(path, "r+") as f:
        edit(f)


def replace(path, **kw):
    def edit(f):
        del f[path]
        f.create_dataset(path, **kw)
    return edit


def link(path, target):
    def edit(f):
        del f[path]
        f[path] = target
    return edit


with h5py.File(base, "r") as f:
    n = f["/ranks/rank"].shape[0]
variant("external_storage", replace("/ranks/host", shape=(n,), dtype="S64",
                                    external=[(canary, 0, h5py.h5f.UNLIMITED)]))


def vds(f):
    del f["/ranks/host"]
    layout = h5py.VirtualLayout(shape=(n,), dtype="S16")
    layout[:] = h5py.VirtualSource(canary_h5, "/x", shape=(64,))[:n]
    f.create_virtual_dataset("/ranks/host", layout)


variant("virtual", vds)
variant("soft_link", link("/ranks/host", h5py.SoftLink("/ranks/file")))
variant("external_link", link("/ranks/host", h5py.ExternalLink(canary_h5, "/x")))
variant("unwritten_chunks", replace("/ranks/busy_ms", shape=(n,), dtype="f8", chunks=(1,)))
variant("unwritten_contiguous", replace("/ranks/busy_ms", shape=(n,), dtype="f8"))
variant("fill_2_30", replace("/ranks/busy_ms", shape=(2**30,), dtype="f8", chunks=(2**16,), maxshape=(None,)))


def gzip_bomb(f):  # 2^27 float64 zeros (1 GiB) in 1 MB: the same deflated chunk written 128 times
    del f["/ranks/busy_ms"]
    d = f.create_dataset("/ranks/busy_ms", shape=(2**27,), dtype="f8", chunks=(2**20,), compression="gzip")
    chunk = zlib.compress(np.zeros(2**20, "f8").tobytes(), 9)
    for i in range(2**7):
        d.id.write_direct_chunk((i * 2**20,), chunk)


def ratio_bomb(f):  # 16 bytes stored per 8 MiB chunk: beyond what deflate can do
    d = f.create_dataset("/extra/ratio", shape=(2**24,), dtype="f8", chunks=(2**20,), compression="gzip")
    for i in range(16):
        d.id.write_direct_chunk((i * 2**20,), b"\x78\x9c" + bytes(14))


variant("gzip_bomb", gzip_bomb)
variant("ratio_bomb", ratio_bomb)
variant("vlen_strings", replace("/ranks/host", data=[f"node-{i}" for i in range(n)], dtype=h5py.string_dtype()))
variant("string_2_40", replace("/ranks/host", shape=(2**40,), dtype="S16", chunks=(2**20,), maxshape=(None,)))
variant("long_strings", replace("/ranks/host", data=np.array([b"h" * 2000] * n, dtype="S2048")))
variant("wrong_length", replace("/ranks/busy_ms", data=np.zeros(n - 1)))
variant("three_dims", replace("/ranks/busy_ms", data=np.zeros((n, 1, 1))))
variant("compound", replace("/ranks/busy_ms", data=np.zeros(n, dtype=[("a", "i4"), ("b", "f8")])))
variant("long_double", replace("/ranks/busy_ms", data=np.zeros(n, dtype=np.longdouble)))
variant("text_for_numbers", replace("/ranks/busy_ms", data=np.array([b"1.0"] * n)))


def rank(value, row):
    def edit(f):
        r = f["/ranks/rank"][()]
        r[row] = value
        f["/ranks/rank"][...] = r
    return edit


variant("rank_2_21", rank(2**21, n - 1))
variant("rank_negative", rank(-1, 0))
variant("rank_duplicate", rank(0, 1))


def offsets(f):
    o = f["/waterfall/ranks_offsets"]
    o[-1] = o[-1] + 1


def attribute(name, value, path="/"):
    def edit(f):
        f[path].attrs[name] = value
    return edit


variant("ragged_offsets", offsets)
variant("ranks_attribute", attribute("ranks", np.int64(n + 1)))
variant("format_version", attribute("format_version", np.int64(2)))
variant("not_our_tool", attribute("tool", np.bytes_(b"other-tool")))
variant("vlen_attribute", attribute("not_corrected_because", "a str attribute is variable-length", "/clock"))
variant("named_datatype", lambda f: f.__setitem__("/extra_type", np.dtype("i4")))


def cycle(f):  # a hard link back to the root: fine, walked once
    f["/ranks/loop"] = f["/"]


variant("hard_link_cycle", cycle)

# Every string of the file (datasets and attributes, but the root's tool) made hostile: terminal
# escapes, a carriage return, markup, a byte that is not UTF-8, mathtext. Fine to read; must come out
# printable.
PAY = b"\x1b[2J\x1b]0;T\x07\rFAKE\xff<b>$\\sqrt{$"


def hostile(f):
    def one(name, obj):
        for k, v in obj.attrs.items():
            a = np.asarray(v)
            if a.dtype.kind == "S" and not (obj.name == "/" and k == "tool"):
                new = np.array([PAY + bytes(x) for x in a.ravel()], dtype=f"S{a.dtype.itemsize + len(PAY)}")
                obj.attrs[k] = new.reshape(a.shape) if a.ndim else new[0]
        if isinstance(obj, h5py.Dataset) and obj.dtype.kind == "S":
            values, attrs, size = obj[()], dict(obj.attrs), obj.dtype.itemsize
            del f[name]
            d = f.create_dataset(name, data=np.array([PAY + bytes(x) for x in values], dtype=f"S{size + len(PAY)}"))
            d.attrs.update(attrs)
    names = ["/"]
    f.visit(lambda name: names.append("/" + name))
    for name in names:
        one(name, f[name])


variant("hostile_strings", hostile)
variant("hostile_compare", hostile, compare)
EOF
V="$TMP/v"
mkfifo "$V/fifo.h5"
mkdir "$V/directory.h5"
ln -s scan.h5 "$TMP/symlink.h5"
declare -A OBJECT=(
  [external_storage]="/ranks/host: stores its values outside the file" [virtual]="/ranks/host: a virtual dataset"
  [soft_link]="/ranks/host: a soft link" [external_link]="/ranks/host: an external link"
  [unwritten_chunks]="/ranks/busy_ms: not written" [unwritten_contiguous]="/ranks/busy_ms: not written"
  [fill_2_30]="/ranks/busy_ms: not written" [gzip_bomb]="/ranks/busy_ms: 134,217,728 rows"
  [ratio_bomb]="/extra/ratio: 256 bytes that expand" [vlen_strings]="/ranks/host: variable-length strings"
  [string_2_40]="/ranks/host: not written" [long_strings]="/ranks/host: 2048-byte strings"
  [wrong_length]="/ranks/busy_ms: 7 rows" [three_dims]="/ranks/busy_ms: 3 dimensions"
  [compound]="/ranks/busy_ms: a compound type" [long_double]="/ranks/busy_ms: 16-byte floats"
  [text_for_numbers]="/ranks/busy_ms: strings where the layout has numbers"
  [rank_2_21]="/ranks/rank: rank 2097152" [rank_negative]="/ranks/rank: rank -1"
  [rank_duplicate]="/ranks/rank: not ascending and unique" [ragged_offsets]="/waterfall/ranks_offsets: ends at"
  [ranks_attribute]="/ranks: 8 rows where the root attribute ranks says 9" [format_version]="format version 2"
  [not_our_tool]="not a straggler-scan output" [vlen_attribute]="/clock@not_corrected_because: variable-length"
  [named_datatype]="/extra_type: a named datatype" [fifo]="not a regular file (a FIFO)"
  [directory]="not a regular file (a directory)"
)
# report_html.py on every variant; each plot script, which opens the file the same way, on one
# (all of them on every reproducer above).
NAMES=($(printf '%s\n' "${!OBJECT[@]}" | sort))
for ((i = 0; i < ${#NAMES[@]}; i += 4)); do  # four at a time
  for name in "${NAMES[@]:i:4}"; do start "b-$name" report_html.py "$V/$name.h5"; done
  wait
  for name in "${NAMES[@]:i:4}"; do was_refused "b-$name" report_html.py "$V/$name.h5" "${OBJECT[$name]}"; done
done
PLOTS=(plot_stragglers.py:external_storage plot_findings.py:gzip_bomb plot_pipeline.py:fifo plot_scaling.py:external_link
       plot_waterfall.py:virtual plot_compare.py:unwritten_chunks)
for p in "${PLOTS[@]}"; do start "p-${p%%:*}" "${p%%:*}" "$V/${p#*:}.h5"; done
wait
for p in "${PLOTS[@]}"; do was_refused "p-${p%%:*}" "${p%%:*}" "$V/${p#*:}.h5" "${OBJECT[${p#*:}]}"; done
refused report_html.py "$TMP/missing.h5" "no such file"
echo "ok: ${#OBJECT[@]} hostile variants refused (${SECONDS}s)"

# The hard-link cycle is fine: walked once, read.
run report_html.py "$V/hard_link_cycle.h5" "$TMP/cycle.html"
[[ $rc -eq 0 && -s "$TMP/cycle.html" ]] || { cat "$TMP/run.err" >&2; fail "hard_link_cycle: exit $rc"; }
run report_html.py "$TMP/symlink.h5" "$TMP/symlink.html"  # a symlink to a scan is followed
[[ $rc -eq 0 ]] || { cat "$TMP/run.err" >&2; fail "a symlink to a scan: exit $rc"; }
echo "ok: a hard-link cycle and a symlink read (${SECONDS}s)"

# Hostile strings: every script succeeds and nothing raw reaches the terminal or the page.
raw() { LC_ALL=C grep -c -P '[\x00-\x08\x0b-\x1f\x7f\xff]' "$@" | awk -F: '{s += $NF} END {print s + 0}'; }
png_ok() { [[ -s "$1" && "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "$1 is not a PNG"; }
H="$V/hostile_strings.h5"
rc=0; "$PY" "$S/report_html.py" "$H" "$TMP/hostile.html" --scan "$SCAN" >"$TMP/h.out" 2>"$TMP/h.err" || rc=$?
[[ $rc -eq 0 ]] || { cat "$TMP/h.err" >&2; fail "hostile_strings: report_html.py exit $rc"; }
(( $(raw "$TMP/hostile.html" "$TMP/h.out" "$TMP/h.err") == 0 )) || fail "hostile_strings: raw control bytes in the page or output"
grep -qF '\x1b[2J\x1b]0;T\x07\rFAKE\xff&lt;b&gt;$\sqrt{$node-00' "$TMP/hostile.html" || fail "hostile_strings: the host is not in the page, printable"
if grep -q '<b>\$' "$TMP/hostile.html"; then fail "hostile_strings: markup from the file in the page"; fi
for script in plot_stragglers.py plot_findings.py plot_pipeline.py plot_scaling.py plot_waterfall.py; do
  rc=0; "$PY" "$S/$script" "$H" "$TMP/hostile-plots" >"$TMP/h.out" 2>"$TMP/h.err" || rc=$?
  [[ $rc -eq 0 ]] || { cat "$TMP/h.err" >&2; fail "hostile_strings: $script exit $rc"; }
  (( $(raw "$TMP/h.out" "$TMP/h.err") == 0 )) || fail "hostile_strings: $script printed raw control bytes"
done
rc=0; "$PY" "$S/plot_compare.py" "$V/hostile_compare.h5" "$TMP/hostile-plots" >"$TMP/h.out" 2>"$TMP/h.err" || rc=$?
[[ $rc -eq 0 ]] || { cat "$TMP/h.err" >&2; fail "hostile_compare: plot_compare.py exit $rc"; }
for png in wait_heatmap blame_per_rank step_time clock_offsets findings_heatmap pipeline_flush pipeline_stages scaling waterfall compare; do
  png_ok "$TMP/hostile-plots/$png.png"
done
echo "ok: hostile strings made printable (page, terminal, plots) (${SECONDS}s)"

# ---------------------------------------------------------------- (c) mathtext in a host name
"$SIM" "$TMP/run128" --layout 2x4x16 --hosts 16 --iterations 10 >/dev/null 2>&1 || fail "straggler-sim 128"
"$PY" - "$TMP/run128" <<'EOF' || fail "could not rename the host"
import sqlite3, sys
for r in range(8):  # node-00 is now "$\sqrt{$" (P_plot_mathtext_host's recipe)
    with sqlite3.connect(f"{sys.argv[1]}/rank_{r}.sqlite") as db:
        db.execute("update TARGET_INFO_SYSTEM_ENV set value='$\\sqrt{$' where name='Hostname'")
EOF
"$SCAN" "$TMP/run128" -q -o "$TMP/h128.h5" >/dev/null 2>&1 || fail "straggler-scan 128"
"$PY" -c "import h5py, sys; assert b'\$\\\\sqrt{\$' in h5py.File(sys.argv[1])['/ranks/host'][()].tolist()" "$TMP/h128.h5" ||
  fail "the host name did not reach the scan"
rc=0; "$PY" "$S/plot_stragglers.py" "$TMP/h128.h5" "$TMP/p128" >"$TMP/p128.log" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { cat "$TMP/p128.log" >&2; fail "mathtext host: plot_stragglers.py exit $rc"; }
for png in wait_heatmap blame_per_rank step_time clock_offsets; do png_ok "$TMP/p128/$png.png"; done
echo "ok: a host named \$\\sqrt{\$ at 128 ranks plots (${SECONDS}s)"

# ---------------------------------------------------------------- (d) a normal scan
rc=0; "$PY" "$S/report_html.py" "$TMP/scan.h5" "$TMP/scan.html" >"$TMP/d.log" 2>&1 || rc=$?
[[ $rc -eq 0 && -s "$TMP/scan.html" ]] || { cat "$TMP/d.log" >&2; fail "report_html.py on a normal scan: exit $rc"; }
for script in plot_stragglers.py plot_findings.py plot_pipeline.py plot_scaling.py plot_waterfall.py; do
  rc=0; "$PY" "$S/$script" "$TMP/scan.h5" "$TMP/plots" >"$TMP/d.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || { cat "$TMP/d.log" >&2; fail "$script on a normal scan: exit $rc"; }
done
rc=0; "$PY" "$S/plot_compare.py" "$TMP/compare.h5" "$TMP/plots" >"$TMP/d.log" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { cat "$TMP/d.log" >&2; fail "plot_compare.py on a compare output: exit $rc"; }
for png in wait_heatmap blame_per_rank step_time clock_offsets findings_heatmap pipeline_flush pipeline_stages scaling waterfall compare; do
  png_ok "$TMP/plots/$png.png"
done
"$PY" "$S/scan_file.py" "$TMP/scan.h5" "$TMP/healthy.h5" "$TMP/h128.h5" >/dev/null || fail "scan_file.py refuses a normal scan"
"$PY" "$S/scan_file.py" --any "$TMP/compare.h5" >/dev/null || fail "scan_file.py refuses a compare output"
echo "ok: every script on a normal scan (${SECONDS}s)"
echo "PASS"
