#!/usr/bin/env bash
# Cost of the what-if replay and waterfall (issue 22) against the rest of the scan: generated runs of
# 512 and 4096 ranks (TP4 x PP4 x DP n, 8 small iterations, one slow GPU from iteration 4, as
# bench/run_scale_bench.sh), each scanned RUNS times with --timings; prints the median of the
# what_if analysis's finish (process 0 replays every phase with every change), of the cross-rank
# replay, and of the whole scan, and the what-if's share of the whole.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
RUNS="${RUNS:-5}"
SIZES="${SIZES:-32 256}"  # DP degree: 512 and 4096 ranks
PROCS="${PROCS:-1}"
DATA="${DATA:-/tmp/ss-scale}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
build >/dev/null
mkdir -p "$DATA"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "| ranks | processes | what-if ms (median) | cross-rank replay ms | whole scan ms | what-if share | what-if rows |\n|---|---|---|---|---|---|---|\n"
for dp in $SIZES; do
  n=$((16 * dp)) run="$DATA/run$((16 * dp))"
  if [ ! -f "$run/truth.json" ]; then
    rm -rf "$run"
    "$BUILD/src/sim/straggler-sim" "$run" --layout "4x4x$dp" --hosts $((n / 8)) --iterations 8 --layers 1 \
      --microbatches 2 --seed 11 --fault slow_gpu:$((n / 2 + 5)):4:1.3 >/dev/null
  fi
  for np in $PROCS; do
    wi=() cr=() tot=()
    launcher=()
    [ "$np" -gt 1 ] && launcher=(mpirun --oversubscribe -n "$np")
    for i in $(seq "$RUNS"); do
      log=$("${launcher[@]}" "$BUILD/src/straggler-scan" "$run" -q -o "$DATA/wi.h5" --summary "$DATA/wi.json" --timings 2>&1)
      wi+=("$(grep -m1 "finish what_if:" <<<"$log" | awk '{print $(NF-7)}')")
      cr+=("$(grep -m1 "replay and sums:" <<<"$log" | awk '{print $(NF-7)}')")
      tot+=("$(grep -m1 "total:" <<<"$log" | awk '{print $(NF-1)}')")
    done
    w=$(printf "%s\n" "${wi[@]}" | median) c=$(printf "%s\n" "${cr[@]}" | median) t=$(printf "%s\n" "${tot[@]}" | median)
    rows=$(/usr/bin/python3 -c "import json; w=json.load(open('$DATA/wi.json'))['what_if']; print(len(w['changes']) if w else 0)")
    printf "| %d | %d | %s | %s | %s | %.1f%% | %s |\n" "$n" "$np" "$w" "$c" "$t" "$(/usr/bin/python3 -c "print(100 * $w / $t)")" "$rows"
  done
done
