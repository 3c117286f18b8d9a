#!/usr/bin/env bash
# Cross-rank scaling benchmark: generated runs of 512..4096 ranks (TP4 x PP4 x DP n, 8 small
# iterations: 1 layer per stage, 2 microbatches, ~1,100 kernels and ~200 NCCL ops per rank; one slow
# GPU at rank n/2+5 from iteration 4), each analysed alone (1 process, no MPI) and with
# `mpirun -n 2`, RUNS times, the layout inferred. Prints a Markdown table: median wall time, the
# largest per-process peak RSS, the bytes the processes exchanged (and per rank), and the verdict.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
RUNS="${RUNS:-3}"
SIZES="${SIZES:-32 64 128 256}"  # DP degree: 512, 1024, 2048, 4096 ranks
PROCS="${PROCS:-1 2}"
DATA="${DATA:-/tmp/ss-scale}"
build >/dev/null
mkdir -p "$DATA"
printf "| ranks | kernels | processes | median wall s | max RSS per process MB | exchanged MB | exchanged bytes per rank | verdict |\n"
printf "|---|---|---|---|---|---|---|---|\n"
for dp in $SIZES; do
  n=$((16 * dp)) run="$DATA/run$((16 * dp))"
  if [ ! -f "$run/truth.json" ]; then
    rm -rf "$run"
    "$BUILD/src/sim/straggler-sim" "$run" --layout "4x4x$dp" --hosts $((n / 8)) --iterations 8 --layers 1 \
      --microbatches 2 --seed 11 --fault slow_gpu:$((n / 2 + 5)):4:1.3 >/dev/null
  fi
  kernels=$(/usr/bin/python3 -c "import json; t=json.load(open('$run/truth.json')); print(sum(r['kernels'] for r in t['per_rank']))")
  for np in $PROCS; do
    times=() rss=0 mb=0 verdict=""
    for i in $(seq "$RUNS"); do
      rm -f "$DATA"/rss.*
      launcher=()
      [ "$np" -gt 1 ] && launcher=(mpirun -n "$np")
      start=$(date +%s.%N)
      # Each process reports its own peak RSS (getrusage of the child) into rss.<rank>.
      "${launcher[@]}" /usr/bin/python3 "$ROOT/bench/peak_rss.py" "$DATA/rss" \
        "$BUILD/src/straggler-scan" "$run" -q -o "$DATA/out.h5" --summary "$DATA/out.json"
      end=$(date +%s.%N)
      times+=("$(/usr/bin/python3 -c "print($end - $start)")")
      for f in "$DATA"/rss.*; do r=$(tail -1 "$f"); [ "$r" -gt "$rss" ] && rss=$r; done
      bytes=$(/usr/bin/python3 -c "import json; print(json.load(open('$DATA/out.json'))['exchange_bytes'])")
      verdict=$(/usr/bin/python3 -c "import json; s=json.load(open('$DATA/out.json'))['stragglers']; print(','.join(f\"{x['rank']}:{x['cause']}@{x['onset_iteration']}\" for x in s) or 'none')")
    done
    med=$(printf "%s\n" "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf "| %d | %s | %d | %.2f | %.0f | %.1f | %.0f | %s |\n" "$n" "$kernels" "$np" "$med" "$((rss / 1024))" \
      "$(/usr/bin/python3 -c "print($bytes / 1e6)")" "$(/usr/bin/python3 -c "print($bytes / $n)")" "$verdict"
  done
done
