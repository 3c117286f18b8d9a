#!/usr/bin/env bash
# Installs, builds, generates a demo run (32 ranks, TP2 x PP2 x DP8 on 4 hosts, rank 13 a slow GPU
# from iteration 8), analyses it with 2 MPI processes (layout inferred) and leaves demo-out/demo.h5 and summary.json.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$ROOT/scripts/setup.sh"
build >/dev/null
RUN="$ROOT/demo-run" OUT="$ROOT/demo-out"
rm -rf "$RUN" && mkdir -p "$OUT"
"$BUILD/src/sim/straggler-sim" "$RUN" --layout 2x2x8 --hosts 4 --iterations 20 --seed 7 \
  --clock-offset-ms 3 --fault slow_gpu:13:8:1.4
echo "demo run: $RUN (what was planted: $RUN/truth.json)"
mpirun -n 2 "$BUILD/src/straggler-scan" "$RUN" -o "$OUT/demo.h5" --summary "$OUT/summary.json"
echo
echo "summary: $OUT/summary.json"
cat "$OUT/summary.json"
