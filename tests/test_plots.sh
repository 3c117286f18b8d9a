#!/usr/bin/env bash
# scripts/plot_stragglers.py, plot_findings.py, plot_pipeline.py, plot_scaling.py, plot_waterfall.py and plot_compare.py on a small simulated run with a straggler,
# on a healthy run and on a single rank (no communicators): each writes the 4 PNG files,
# non-empty, and prints their paths.
# Usage: SS_BUILD=/path/to/build tests/test_plots.sh
set -euo pipefail

: "${SS_BUILD:?set SS_BUILD to the build directory}"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=${SS_PYTHON:-/usr/bin/python3}  # needs h5py, numpy, matplotlib
SIM="$SS_BUILD/src/sim/straggler-sim"
SCAN="$SS_BUILD/src/straggler-scan"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# check_case NAME LAYOUT HOSTS [fault args...]: simulate, analyse, plot, check the PNGs.
check_case() {
  local name=$1 layout=$2 hosts=$3; shift 3
  local run="$TMP/$name-run" h5="$TMP/$name.h5" out="$TMP/$name-plots"
  "$SIM" "$run" --layout "$layout" --hosts "$hosts" --iterations 6 --seed 3 "$@" >"$TMP/$name-sim.log" 2>&1 ||
    { cat "$TMP/$name-sim.log" >&2; fail "$name: straggler-sim"; }
  "$SCAN" "$run" -q --layout "$layout" -o "$h5" >"$TMP/$name-scan.log" 2>&1 ||
    { cat "$TMP/$name-scan.log" >&2; fail "$name: straggler-scan"; }
  "$PY" "$SRC/scripts/plot_stragglers.py" "$h5" "$out" >"$TMP/$name-plot.log" 2>&1 ||
    { cat "$TMP/$name-plot.log" >&2; fail "$name: plot_stragglers.py"; }
  for png in wait_heatmap blame_per_rank step_time clock_offsets; do
    local f="$out/$png.png"
    [[ -s "$f" ]] || fail "$name: $f missing or empty"
    [[ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "$name: $f is not a PNG"
    grep -qxF "$f" "$TMP/$name-plot.log" || fail "$name: $f not printed"
  done
  "$PY" "$SRC/scripts/plot_findings.py" "$h5" "$out" >"$TMP/$name-findings.log" 2>&1 ||
    { cat "$TMP/$name-findings.log" >&2; fail "$name: plot_findings.py"; }
  [[ "$(head -c 8 "$out/findings_heatmap.png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] ||
    fail "$name: findings_heatmap.png is not a PNG"
  grep -qxF "$out/findings_heatmap.png" "$TMP/$name-findings.log" || fail "$name: findings_heatmap.png not printed"
  "$PY" "$SRC/scripts/plot_pipeline.py" "$h5" "$out" >"$TMP/$name-pipeline.log" 2>&1 ||
    { cat "$TMP/$name-pipeline.log" >&2; fail "$name: plot_pipeline.py"; }
  for png in pipeline_flush pipeline_stages; do  # a note on the figure where no pipeline was measured
    [[ "$(head -c 8 "$out/$png.png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "$name: $png.png is not a PNG"
    grep -qxF "$out/$png.png" "$TMP/$name-pipeline.log" || fail "$name: $png.png not printed"
  done
  echo "ok: $name"
}

check_case straggler 2x2x2 2 --fault slow_gpu:3:2:1.5
check_case healthy 2x2x2 2
check_case single 1x1x1 1  # one rank: no communicators, empty /collectives tables
check_case pipeline 1x4x2 1 --microbatches 8 --fault stage_imbalance:3:1.35

# The straggler run found rank 3, the healthy one none, the single rank no communicator: the
# empty-table paths were taken.
"$PY" - "$TMP/straggler.h5" "$TMP/healthy.h5" "$TMP/single.h5" "$TMP/pipeline.h5" <<'EOF' || fail "unexpected verdicts"
import sys, h5py
with h5py.File(sys.argv[1]) as f:
    assert list(f["/stragglers/rank"][()]) == [3], f["/stragglers/rank"][()]
    # a slow GPU does more compute per step than its peers, who wait for it: comm_imbalance on rank 3 only
    assert list(f["/findings/rank"][()]) == [3], f["/findings/rank"][()]
with h5py.File(sys.argv[2]) as f:
    assert len(f["/stragglers/rank"]) == 0 and len(f["/iterations/change_points/iteration"]) == 0
with h5py.File(sys.argv[3]) as f:
    assert len(f["/collectives/communicators/size"]) == 0 and len(f["/collectives/arrival_ns"]) == 0
    assert f["/pipeline/stages"].attrs["measured"] == 0
with h5py.File(sys.argv[4]) as f:
    assert f["/pipeline/stages"].attrs["bottleneck_stage"] == 3, dict(f["/pipeline/stages"].attrs)
EOF

# plot_scaling.py: on one scan's rows (the single rank: no rows, a note) and on `straggler-scan
# scaling` over two saved scans of different sizes.
png_ok() { [[ -s "$1" && "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "$1 is not a PNG"; }
for n in 8 16; do
  "$SIM" "$TMP/dp$n-run" --layout 1x1x$n --hosts $((n / 8)) --iterations 4 --layers 1 --microbatches 1 --fabric-seed 3 --payloads \
    >/dev/null 2>&1 || fail "straggler-sim dp$n"
  "$SCAN" "$TMP/dp$n-run" -q -o "$TMP/dp$n.h5" || fail "scan dp$n"
done
"$SCAN" scaling "$TMP/dp8.h5" "$TMP/dp16.h5" -q -o "$TMP/scaling.h5" || fail "straggler-scan scaling"
for h5 in scaling single straggler; do
  "$PY" "$SRC/scripts/plot_scaling.py" "$TMP/$h5.h5" "$TMP/$h5-scaling" >"$TMP/$h5-scaling.log" 2>&1 ||
    { cat "$TMP/$h5-scaling.log" >&2; fail "plot_scaling.py $h5"; }
  png_ok "$TMP/$h5-scaling/scaling.png"
  grep -qxF "$TMP/$h5-scaling/scaling.png" "$TMP/$h5-scaling.log" || fail "$h5: scaling.png not printed"
done
# 8 GPUs in one node, then 16 over two: the node boundary is the cliff.
"$PY" - "$TMP/scaling.h5" <<'EOF' || fail "unexpected scaling rows"
import sys, h5py
with h5py.File(sys.argv[1]) as f:
    g = f["/scaling/rows"]
    cliff = {int(n): int(c) for n, c in zip(g["group_size"][()], g["cliff"][()])}
    assert cliff == {8: 0, 16: 1}, cliff
    assert [c.decode() for c in g["cause"][()]] == ["", "node_boundary"], g["cause"][()]
EOF
echo "ok: scaling"

# plot_waterfall.py: one scan (its phases), two side by side, and the single rank (no waterfall: a note).
for args in "straggler" "healthy straggler" "single"; do
  files=(); for h5 in $args; do files+=("$TMP/$h5.h5"); done
  out="$TMP/waterfall-${args// /-}"
  "$PY" "$SRC/scripts/plot_waterfall.py" "${files[@]}" "$out" >"$out.log" 2>&1 || { cat "$out.log" >&2; fail "plot_waterfall.py $args"; }
  png_ok "$out/waterfall.png"
  grep -qxF "$out/waterfall.png" "$out.log" || fail "$args: waterfall.png not printed"
done
echo "ok: waterfall"

# plot_compare.py: `straggler-scan compare` of the healthy and the straggler runs.
"$SCAN" compare "$TMP/healthy.h5" "$TMP/straggler.h5" -q -o "$TMP/compare.h5" || fail "straggler-scan compare"
"$PY" "$SRC/scripts/plot_compare.py" "$TMP/compare.h5" "$TMP/compare-plots" >"$TMP/compare.log" 2>&1 ||
  { cat "$TMP/compare.log" >&2; fail "plot_compare.py"; }
png_ok "$TMP/compare-plots/compare.png"
grep -qxF "$TMP/compare-plots/compare.png" "$TMP/compare.log" || fail "compare.png not printed"
echo "ok: compare"

# Usage error without arguments.
if "$PY" "$SRC/scripts/plot_stragglers.py" >/dev/null 2>&1; then fail "no usage error without arguments"; fi
if "$PY" "$SRC/scripts/plot_findings.py" >/dev/null 2>&1; then fail "plot_findings.py: no usage error without arguments"; fi
if "$PY" "$SRC/scripts/plot_pipeline.py" >/dev/null 2>&1; then fail "plot_pipeline.py: no usage error without arguments"; fi
if "$PY" "$SRC/scripts/plot_scaling.py" >/dev/null 2>&1; then fail "plot_scaling.py: no usage error without arguments"; fi
if "$PY" "$SRC/scripts/plot_waterfall.py" >/dev/null 2>&1; then fail "plot_waterfall.py: no usage error without arguments"; fi
if "$PY" "$SRC/scripts/plot_compare.py" >/dev/null 2>&1; then fail "plot_compare.py: no usage error without arguments"; fi
echo "PASS"
