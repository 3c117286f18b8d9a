#!/usr/bin/env bash
# Kineto reader benchmark (issue 25): one large generated PyTorch profiler trace (straggler-sim
# --format kineto, one rank, >= 5M trace events), read by straggler-scan (bench/profile_read: the
# reader + annotation, then per-rank metrics) against a plain Python json.load of the same file in the
# same run (RUNS runs each, interleaved, medians); and the whole real 8-rank DLRM directory
# (../shared/data/real/param/dlrm_kineto) end to end, straggler-scan alone (process start and HDF5
# included), RUNS x 3 runs. Prints Markdown tables for bench/RESULTS.md.
#   RUNS=5 KERNELS=1100000 bench/run_kineto_bench.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
RUNS="${RUNS:-5}"
KERNELS="${KERNELS:-1100000}"
DATA="${DATA:-/tmp/ss-kineto-bench}"
SHARED="${SHARED:-$ROOT/../shared}"
cmake -S "$ROOT" --preset release -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target straggler-sim straggler-scan profile_read >/dev/null
mkdir -p "$DATA"
BIG="$DATA/big"
if ! ls "$BIG"/*.json >/dev/null 2>&1; then
  rm -rf "$BIG"
  "$BUILD/src/sim/straggler-sim" "$BIG" --format kineto --layout 1x1x1 --hosts 1 \
    --target-kernels "$KERNELS" --seed 3 >/dev/null
fi
F="$(ls "$BIG"/*.json | head -1)"
: >"$DATA/runs.jsonl"
cat "$F" >/dev/null  # warm the page cache once for everyone
for i in $(seq "$RUNS"); do
  py=$(/usr/bin/python3 -c '
import json, resource, sys, time
t = time.perf_counter()
with open(sys.argv[1]) as f:
    d = json.load(f)
s = time.perf_counter() - t
print(json.dumps({"seconds": s, "events": len(d["traceEvents"]), "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
' "$F")
  echo "{\"python\": $py, \"scan\": $("$BUILD/bench/profile_read" "$F")}" >>"$DATA/runs.jsonl"
done
DLRM="$DATA/dlrm"
if [ -f "$SHARED/data/real/param/dlrm_kineto/dlrm_kineto.tar.gz" ]; then
  rm -rf "$DLRM" && mkdir -p "$DLRM" && tar -xzf "$SHARED/data/real/param/dlrm_kineto/dlrm_kineto.tar.gz" -C "$DLRM"
  cat "$DLRM"/dlrm_kineto/*.json >/dev/null
  for i in $(seq $((RUNS * 3))); do
    /usr/bin/time -f '{"dlrm_seconds": %e, "dlrm_rss_kb": %M}' -a -o "$DATA/runs.jsonl" \
      "$BUILD/src/straggler-scan" "$DLRM/dlrm_kineto" -o "$DATA/dlrm.h5" --summary "$DATA/dlrm.json" -q
  done
fi
/usr/bin/python3 - "$DATA/runs.jsonl" "$F" <<'PY'
import json, os, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
big = [r for r in runs if "python" in r]
med = statistics.median
events = big[0]["python"]["events"]
py = med(r["python"]["seconds"] for r in big)
rd = med(r["scan"]["read_seconds"] for r in big)
both = med(r["scan"]["seconds"] for r in big)
mb = os.path.getsize(sys.argv[2]) / 1e6
print(f"large trace: {mb:.0f} MB, {events:,} events, {big[0]['scan']['kernels']:,} kernels; {len(big)} runs each, interleaved, medians")
print("| | seconds | events per second | MB/s | peak RSS MB |")
print("|---|---|---|---|---|")
print(f"| Python json.load | {py:.2f} | {events / py / 1e6:.2f} M | {mb / py:.0f} | {med(r['python']['max_rss_kb'] for r in big) / 1024:.0f} |")
print(f"| straggler-scan reader (read + NCCL annotation) | {rd:.2f} | {events / rd / 1e6:.2f} M | {mb / rd:.0f} | {med(r['scan']['max_rss_kb'] for r in big) / 1024:.0f} |")
print(f"| straggler-scan reader + per-rank metrics | {both:.2f} | {events / both / 1e6:.2f} M | {mb / both:.0f} | |")
print(f"\nreader vs json.load: {py / rd:.1f}x faster")
dl = [r for r in runs if "dlrm_seconds" in r]
if dl:
    s = med(r["dlrm_seconds"] for r in dl)
    print(f"\nDLRM, 8 ranks, whole run (straggler-scan alone, HDF5 and summary written): median {s:.3f} s of {len(dl)} runs "
          f"(min {min(r['dlrm_seconds'] for r in dl):.3f}, max {max(r['dlrm_seconds'] for r in dl):.3f}), "
          f"peak RSS {med(r['dlrm_rss_kb'] for r in dl) / 1024:.0f} MB; HTA takes about 2.5 s: {2.5 / s:.0f}x")
PY
