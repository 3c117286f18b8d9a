#!/usr/bin/env bash
# Installs, builds, generates a demo run (32 ranks, TP2 x PP2 x DP8 on 4 hosts, rank 13 a slow GPU
# from iteration 8), analyses it with 2 MPI processes (layout inferred) and leaves demo-out/demo.h5 and summary.json.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
echo "demo: checking the Debian packages (scripts/setup.sh)"
"$ROOT/scripts/setup.sh"
echo "demo: building in $BUILD (the first build takes a few minutes on 2 cores)"
# Progress and errors only; a failed build stops the demo (grep's status must not hide it).
set +e
build 2>&1 | grep --line-buffered -E '^\[ *[0-9]+%\] (Built target|Linking)|error'
status=${PIPESTATUS[0]}
set -e
[ "$status" = 0 ] || { echo "demo: the build failed (above)" >&2; exit 1; }
echo "demo: built $BUILD/src/straggler-scan and $BUILD/src/sim/straggler-sim"
RUN="$ROOT/demo-run" OUT="$ROOT/demo-out"
rm -rf "$RUN" && mkdir -p "$OUT"
"$BUILD/src/sim/straggler-sim" "$RUN" --layout 2x2x8 --hosts 4 --iterations 20 --seed 7 \
  --clock-offset-ms 3 --fault slow_gpu:13:8:1.4
echo "demo run: $RUN (what was planted: $RUN/truth.json)"
mpirun -n 2 "$BUILD/src/straggler-scan" "$RUN" -o "$OUT/demo.h5" --summary "$OUT/summary.json"
echo
echo "summary: $OUT/summary.json"
cat "$OUT/summary.json"
