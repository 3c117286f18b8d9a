#!/usr/bin/env bash
# Issue 24's scale series: the whole analysis (bench/scale_records: the real driver on timelines
# synthesized in memory) at 16k-100k ranks, under P processes (oversubscribed beyond the cores).
# The job: TP4 x PP(n) x DP256 (DP groups of 256: a group's members are compared pairwise, so
# the groups stay one size while the job grows), 3 iterations of 16 TP all-reduces, 16 DP
# all-reduces and 16 p2p ops per pipeline link (~190 ops per rank), one slow rank.
# Prints a Markdown table: wall (max over processes), peak RSS per process (max, and process 0's),
# the per-stage times of process 0 (SCALE_TIMINGS), and the verdict.
#   SERIES="16384:4x16x256:2 ..." bench/scale_series.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
SERIES="${SERIES:-16384:4x16x256:2 32768:4x32x256:2 65536:4x64x256:2 16384:4x16x256:8 32768:4x32x256:8 65536:4x64x256:8 98304:4x96x256:8}"
DATA="${DATA:-/tmp/ss-scale-series}"
cmake --build "$BUILD" -j "$JOBS" --target scale_records >/dev/null
mkdir -p "$DATA"
printf "| ranks | layout | processes | wall s | max RSS per process MB | process 0 RSS MB | read s | infer s | replay s | gather records s | what-if and root blame s | HDF5 s | verdict |\n"
printf "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
for item in $SERIES; do
  IFS=: read -r ranks layout np <<<"$item"
  dir="$DATA/run-$ranks-$np"
  rm -rf "$dir"
  log="$DATA/log-$ranks-$np.txt"
  SCALE_TIMINGS=1 mpirun -n "$np" "$BUILD/bench/scale_records" "$ranks" 100 "$dir" "$layout" 16 >"$log" 2>&1 || {
    echo "| $ranks | $layout | $np | failed: see $log |"
    continue
  }
  /usr/bin/python3 - "$log" "$dir/summary.json" "$ranks" "$layout" "$np" <<'PY'
import json, re, sys
log, summary, ranks, layout, np = sys.argv[1:]
lines = open(log).read().splitlines()
procs = [json.loads(l) for l in lines if l.startswith('{"process"')]
stage = {}
for l in lines:
    m = re.match(r"\s+(.+?): (\d+) ms,", l)
    if m: stage[m.group(1)] = stage.get(m.group(1), 0) + int(m.group(2)) / 1000
whatif = sum(v for k, v in stage.items() if k.startswith("what-if"))
s = json.load(open(summary))
verdict = ",".join(f"{x['rank']}:{x['cause']}" for x in s["stragglers"]) or "none"
p0 = [p for p in procs if p["process"] == 0][0]
print(f"| {ranks} | {layout} | {np} | {max(p['seconds'] for p in procs):.1f} | {max(p['max_rss_mb'] for p in procs):.0f} | "
      f"{p0['max_rss_mb']:.0f} | {stage.get('read and per-rank metrics', 0):.1f} | {stage.get('infer communicators', 0):.1f} | "
      f"{stage.get('replay owned communicators', 0) + stage.get('align clocks', 0):.1f} | {stage.get('gather op records (process 0)', 0) + stage.get('root blame (process 0)', 0):.1f} | "
      f"{whatif:.1f} | {stage.get('write HDF5', 0):.1f} | {verdict} |")
PY
  rm -rf "$dir/in" "$dir/out.h5"
done
