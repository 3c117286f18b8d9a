#!/usr/bin/env bash
# Per-profile benchmark: one generated profile of >= 1M kernels; straggler-scan's read + per-rank
# metrics against the raw SQLite limit (raw_sqlite_scan) and pandas read_sql, medians of RUNS runs
# each, interleaved so that all see the same machine state. Prints a Markdown table.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
RUNS="${RUNS:-5}"
DATA="${DATA:-/tmp/ss-bench}"
build >/dev/null
if [ ! -f "$DATA/rank_0.sqlite" ]; then
  rm -rf "$DATA"
  "$BUILD/src/sim/straggler-sim" "$DATA" --layout 1x1x1 --hosts 1 --target-kernels 1000000 --seed 3 >/dev/null
fi
F="$DATA/rank_0.sqlite"
: >"$DATA/raw.jsonl"; : >"$DATA/scan.jsonl"; : >"$DATA/pandas.jsonl"
cat "$F" >/dev/null  # warm the page cache once for everyone
for i in $(seq "$RUNS"); do
  "$BUILD/bench/raw_sqlite_scan" "$F" >>"$DATA/raw.jsonl"
  "$BUILD/bench/profile_read" "$F" >>"$DATA/scan.jsonl"
  if [ "$i" -le 3 ]; then /usr/bin/python3 "$ROOT/bench/pandas_read.py" "$F" >>"$DATA/pandas.jsonl"; fi
done
/usr/bin/python3 - "$DATA" "$F" <<'PY'
import json, os, statistics, sys
d, f = sys.argv[1], sys.argv[2]
load = lambda n: [json.loads(l) for l in open(os.path.join(d, n))]
raw, scan, pd = load("raw.jsonl"), load("scan.jsonl"), load("pandas.jsonl")
med = lambda rows, k="seconds": statistics.median(r[k] for r in rows)
rows = raw[0]["rows"]
r, s, p = med(raw), med(scan), med(pd)
rss_mb = max(x["max_rss_kb"] for x in scan) / 1024
budget = (64 * rows) / 2**20 + 50
print(f"profile: {f} ({os.path.getsize(f)/2**20:.0f} MiB), {rows} kernel rows; runs: {len(raw)} (pandas {len(pd)})")
print("| what | median s | rows/s | ratio to raw |")
print("|---|---|---|---|")
print(f"| raw SQLite scan (C, 5 kernel columns) | {r:.3f} | {rows/r/1e6:.2f} M | 1.00 |")
print(f"| straggler-scan read + per-rank metrics | {s:.3f} | {rows/s/1e6:.2f} M | {s/r:.2f} |")
print(f"|   of which read | {med(scan,'read_seconds'):.3f} | | {med(scan,'read_seconds')/r:.2f} |")
print(f"|   of which metrics | {med(scan,'metrics_seconds'):.3f} | | {med(scan,'metrics_seconds')/r:.2f} |")
print(f"| pandas read_sql (same 5 columns) | {p:.3f} | {rows/p/1e6:.2f} M | {p/r:.2f} |")
print(f"\npeak RSS of profile_read: {rss_mb:.1f} MiB; budget 64 B/kernel + 50 MB = {budget:.1f} MiB "
      f"({(rss_mb - 50) * 2**20 / rows:.1f} B/kernel above 50 MB)")
PY
