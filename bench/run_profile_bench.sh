#!/usr/bin/env bash
# Per-profile benchmark (issue 8, "per-profile cost at the floor"): one generated export of ~1M
# kernels, in the generator's row order and shuffled (nsys promises no order); straggler-scan's read
# + per-rank metrics (bench/profile_read) against a raw C scan of the kernel and runtime tables
# (bench/raw_sqlite_scan), RUNS runs each, interleaved so that all see the same machine state.
# Prints a Markdown table of medians: wall and CPU seconds (the reader uses two threads; CPU
# seconds are the steadier figure on a shared machine). Also pandas read_sql (ordered file only).
# BUILD=build-dir JOBS=n as in scripts/env.sh; only the three tools are built.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
RUNS="${RUNS:-5}"
DATA="${DATA:-/tmp/ss-bench}"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target straggler-sim profile_read raw_sqlite_scan >/dev/null
SIM=("$BUILD/src/sim/straggler-sim" --layout 1x1x1 --hosts 1 --target-kernels 1000000 --seed 3)
[ -f "$DATA/ordered/rank_0.sqlite" ] || { rm -rf "$DATA/ordered"; "${SIM[@]}" "$DATA/ordered" 2>/dev/null; }
[ -f "$DATA/shuffled/rank_0.sqlite" ] || { rm -rf "$DATA/shuffled"; "${SIM[@]}" "$DATA/shuffled" --shuffle-rows 2>/dev/null; }
: >"$DATA/runs.jsonl"
cat "$DATA"/*/rank_0.sqlite >/dev/null  # warm the page cache once for everyone
for i in $(seq "$RUNS"); do
  for order in ordered shuffled; do
    F="$DATA/$order/rank_0.sqlite"
    echo "{\"order\": \"$order\", \"raw\": $("$BUILD/bench/raw_sqlite_scan" "$F"), \"scan\": $("$BUILD/bench/profile_read" "$F")}" >>"$DATA/runs.jsonl"
  done
  if [ "$i" -le 3 ] && [ -z "${NO_PANDAS:-}" ]; then
    echo "{\"order\": \"pandas\", \"pandas\": $(/usr/bin/python3 "$ROOT/bench/pandas_read.py" "$DATA/ordered/rank_0.sqlite")}" >>"$DATA/runs.jsonl"
  fi
done
/usr/bin/python3 - "$DATA" <<'PY'
import json, os, statistics, sys
d = sys.argv[1]
runs = [json.loads(l) for l in open(os.path.join(d, "runs.jsonl"))]
med = lambda xs: statistics.median(xs)
print(f"runs: {sum(r['order'] == 'ordered' for r in runs)} per order, interleaved")
print("| rows | raw scan s (CPU s) | read + metrics s (CPU s) | of which read s | metrics s | ratio wall | ratio CPU | peak RSS MiB |")
print("|---|---|---|---|---|---|---|---|")
for order in ("ordered", "shuffled"):
    rs = [r for r in runs if r["order"] == order]
    raw, scan = [r["raw"] for r in rs], [r["scan"] for r in rs]
    rw, rc = med(x["seconds"] for x in raw), med(x["cpu_seconds"] for x in raw)
    sw, sc = med(x["seconds"] for x in scan), med(x["cpu_seconds"] for x in scan)
    print(f"| {order}: {raw[0]['rows']} kernels + {raw[0]['runtime_rows']} runtime | {rw:.3f} ({rc:.3f}) | "
          f"{sw:.3f} ({sc:.3f}) | {med(x['read_seconds'] for x in scan):.3f} | {med(x['metrics_seconds'] for x in scan):.3f} | "
          f"{sw / rw:.2f} | {sc / rc:.2f} | {max(x['max_rss_kb'] for x in scan) / 1024:.1f} |")
pd = [r["pandas"]["seconds"] for r in runs if r["order"] == "pandas"]
if pd:
    print(f"\npandas read_sql of 5 kernel columns, ordered file: {med(pd):.3f} s (median of {len(pd)})")
PY
