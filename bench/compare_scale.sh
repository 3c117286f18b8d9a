#!/usr/bin/env bash
# Two straggler-scan builds on the same generated 512-rank run (TP4 x PP4 x DP32, 8 small
# iterations, a slow GPU at rank 261 from iteration 4; the smallest case of run_scale_bench.sh),
# interleaved, RUNS times each, alone and with `mpirun -n 2`. One line per run:
#   processes build wall_s peak_rss_kb exchange_bytes verdict
# Usage: OLD=/path/to/old/straggler-scan NEW=build/src/straggler-scan bench/compare_scale.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
RUNS="${RUNS:-3}"
DATA="${DATA:-/tmp/ss-scale}"
NEW="${NEW:-$BUILD/src/straggler-scan}"
: "${OLD:?set OLD to the straggler-scan to compare with}"
run="$DATA/run512"
mkdir -p "$DATA"
if [ ! -f "$run/truth.json" ]; then
  rm -rf "$run"
  "$BUILD/src/sim/straggler-sim" "$run" --layout 4x4x32 --hosts 64 --iterations 8 --layers 1 --microbatches 2 \
    --seed 11 --fault slow_gpu:261:4:1.3 >/dev/null
fi
for np in 1 2; do
  for i in $(seq "$RUNS"); do
    for who in old new; do
      bin="$OLD"; [ "$who" = new ] && bin="$NEW"
      launcher=(); [ "$np" -gt 1 ] && launcher=(mpirun -n "$np")
      rm -f "$DATA"/rss.*
      start=$(date +%s.%N)
      "${launcher[@]}" /usr/bin/python3 "$ROOT/bench/peak_rss.py" "$DATA/rss" "$bin" "$run" -q -o "$DATA/$who.h5" --summary "$DATA/$who.json"
      end=$(date +%s.%N)
      rss=0; for f in "$DATA"/rss.*; do r=$(tail -1 "$f"); [ "$r" -gt "$rss" ] && rss=$r; done
      /usr/bin/python3 -c "
import json; s = json.load(open('$DATA/$who.json'))
print($np, '$who', round($end - $start, 3), $rss, s['exchange_bytes'], ','.join(f\"{x['rank']}:{x['cause']}\" for x in s['stragglers']) or 'none')"
    done
  done
done
