#!/usr/bin/env bash
# Cost of `straggler-scan scaling` over four saved scans of pure data-parallel runs at 64, 128, 256
# and 512 ranks (hosts of 8, pods of 32 nodes, 256 MiB all-reduces with NVTX payloads), against a
# baseline measured in the same run: h5dump reading the same four files' /scaling/groups.
# RUNS times each, interleaved; prints each run and the medians.
# Usage: bench/scaling_bench.sh   (RUNS=5, DATA=/tmp/ss-scaling-bench)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
RUNS="${RUNS:-5}"
DATA="${DATA:-/tmp/ss-scaling-bench}"
SCAN="$BUILD/src/straggler-scan"
mkdir -p "$DATA"
h5s=()
for n in 64 128 256 512; do
  if [ ! -f "$DATA/n$n.h5" ]; then
    rm -rf "$DATA/n$n"
    "$BUILD/src/sim/straggler-sim" "$DATA/n$n" --layout "1x1x$n" --hosts $((n / 8)) --iterations 4 --layers 1 --microbatches 1 \
      --fabric-seed 3 --nodes-per-pod 32 --dp-bytes 268435456 --payloads >/dev/null
    "$SCAN" "$DATA/n$n" -q -o "$DATA/n$n.h5"
  fi
  h5s+=("$DATA/n$n.h5")
done
printf 'nodes_per_pod = 32\n' > "$DATA/fabric.txt"
now() { date +%s.%N; }
scaling=() baseline=()
for i in $(seq "$RUNS"); do
  t0=$(now); for f in "${h5s[@]}"; do h5dump -g /scaling/groups "$f" >/dev/null; done; t1=$(now)
  "$SCAN" scaling "${h5s[@]}" --fabric "$DATA/fabric.txt" -q -o "$DATA/scaling.h5" --summary "$DATA/scaling.json"; t2=$(now)
  b=$(echo "$t1 - $t0" | bc -l) s=$(echo "$t2 - $t1" | bc -l)
  baseline+=("$b") scaling+=("$s")
  printf 'run %d: h5dump %.3f s, scaling %.3f s\n' "$i" "$b" "$s"
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mb=$(med "${baseline[@]}") ms=$(med "${scaling[@]}")
printf 'median: h5dump of the four files %.3f s, scaling %.3f s, ratio %.2f; cliffs: %s\n' "$mb" "$ms" "$(echo "$ms / $mb" | bc -l)" \
  "$(/usr/bin/python3 -c "import json,sys; print([(r['group_size'], r['cause']) for r in json.load(open(sys.argv[1]))['scaling'] if r['cliff']])" "$DATA/scaling.json")"
