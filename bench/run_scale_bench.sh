#!/usr/bin/env bash
# Cross-rank scaling benchmark: generated runs of 64..512 ranks (TP4 x PP4 x DP n, ~KERNELS kernels
# per rank), each analysed with 1 and 2 MPI processes, RUNS times; median wall time, the largest
# per-process peak RSS, and the bytes exchanged between processes. Prints a Markdown table.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
RUNS="${RUNS:-3}"
KERNELS="${KERNELS:-20000}"
SIZES="${SIZES:-4 8 16 32}"  # DP degree: 64, 128, 256, 512 ranks
DATA="${DATA:-/tmp/ss-scale}"
build >/dev/null
mkdir -p "$DATA"
printf "| ranks | kernels | processes | median wall s | max RSS per process MB | exchanged MB | verdict |\n|---|---|---|---|---|---|---|\n"
for dp in $SIZES; do
  n=$((16 * dp)) hosts=$((2 * dp)) run="$DATA/run$n"
  if [ ! -f "$run/truth.json" ]; then
    rm -rf "$run"
    "$BUILD/src/sim/straggler-sim" "$run" --layout "4x4x$dp" --hosts "$hosts" --target-kernels "$KERNELS" --seed 11 \
      --fault slow_gpu:$((n / 2 + 5)):6:1.3 >/dev/null
  fi
  kernels=$(/usr/bin/python3 -c "import json,sys; t=json.load(open('$run/truth.json')); print(sum(r['kernels'] for r in t['per_rank']))")
  for np in 1 2; do
    times=() rss=0 mb=0 verdict=""
    for i in $(seq "$RUNS"); do
      rm -f "$DATA"/rss.*
      start=$(date +%s.%N)
      # Each process reports its own peak RSS (getrusage of the child) into rss.<rank>.
      mpirun -n "$np" bash -c 'exec /usr/bin/python3 "$0" "$@"' "$ROOT/bench/peak_rss.py" "$DATA/rss" \
        "$BUILD/src/straggler-scan" "$run" --layout "4x4x$dp" -q -o "$DATA/out.h5" --summary "$DATA/out.json"
      end=$(date +%s.%N)
      times+=("$(/usr/bin/python3 -c "print($end - $start)")")
      for f in "$DATA"/rss.*; do r=$(tail -1 "$f"); [ "$r" -gt "$rss" ] && rss=$r; done
      mb=$(/usr/bin/python3 -c "import json; print(round(json.load(open('$DATA/out.json'))['exchange_bytes']/1e6, 1))")
      verdict=$(/usr/bin/python3 -c "import json; s=json.load(open('$DATA/out.json'))['stragglers']; print(','.join(f\"{x['rank']}:{x['cause']}\" for x in s) or 'none')")
    done
    med=$(printf "%s\n" "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf "| %d | %s | %d | %.2f | %.0f | %s | %s |\n" "$n" "$kernels" "$np" "$med" "$((rss / 1024))" "$mb" "$verdict"
  done
done
