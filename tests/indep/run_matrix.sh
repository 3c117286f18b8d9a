#!/bin/bash
# Independent test matrix for straggler-scan: simulate (tests/indep/indep_sim.py), analyse, check.
#   tests/indep/run_matrix.sh [--quick | --full] [--seeds "1 2"] [--out DIR] [--keep]
# SS_SCAN_BIN: the straggler-scan binary (default: build/src/straggler-scan of this checkout).
# SS_DDL_DIR : folder with the nsys DDL dumps (default ../shared/docs/nsys-ddl next to the checkout).
# Default: each shape x fault once, conventions rotating; --full: every convention too; --quick: ~10 runs.
# Exit 0 when every run passed its checks, 1 otherwise, 77 when the DDL dumps or the binary are absent.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BIN="${SS_SCAN_BIN:-$REPO/build/src/straggler-scan}"
DDL="${SS_DDL_DIR:-$(cd "$REPO/.." && pwd)/shared/docs/nsys-ddl}"
MODE=default SEEDS="1" OUT="${TMPDIR:-/tmp}/indep-matrix" KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) MODE=quick ;; --full) MODE=full ;; --keep) KEEP=1 ;;
    --seeds) SEEDS="$2"; shift ;; --out) OUT="$2"; shift ;;
    *) echo "usage: $0 [--quick|--full] [--seeds \"1 2\"] [--out DIR] [--keep]" >&2; exit 2 ;;
  esac; shift
done
[ -x "$BIN" ] || { echo "SKIP: no straggler-scan binary at $BIN (set SS_SCAN_BIN)"; exit 77; }
[ -f "$DDL/nsys-2026.2.1_schema-3.25.0_lazy-partial.sql" ] || { echo "SKIP: no DDL dumps in $DDL (set SS_DDL_DIR)"; exit 77; }
mkdir -p "$OUT"; RESULTS="$OUT/results.tsv"; : > "$RESULTS"

# shape: name layout gpus_per_host | ranks for slow_gpu host_delay extra_work crash stuck | slow-link hosts
SHAPES=(
  "TP1xPP1xDP8 1x1x8 4 | 5 2 6 3 4 | 0 1"
  "TP2xPP2xDP4 2x2x4 4 | 13 3 9 6 11 | 0 1"
  "TP2xPP4xDP4 2x4x4 8 | 21 5 14 26 10 | 1 2"
  "TP4xPP2xDP8 4x2x8 8 | 45 6 50 37 20 | 1 2"
)
# convention: name and simulator options
CONVS=(
  "rank-3.25 --files rank --schema 3.25"
  "host-3.25+markers --files host --schema 3.25 --markers"
  "rank-3.0+markers+hostnames+rsag --files rank --schema 3.0 --markers --naming hostname --dp-mode rsag"
  "host-3.0-noNCCLnvtx --files host --schema 3.0 --no-nccl-nvtx"
)
FAULTS=(healthy slow_gpu host_delay extra_work slow_link two crash stuck)

fault_args() {  # fault, then the shape's ranks: sg hd ew cr st h1 h2
  local f=$1 sg=$2 hd=$3 ew=$4 cr=$5 st=$6 h1=$7 h2=$8
  case $f in
    healthy) echo "" ;;
    slow_gpu) echo "--fault slow_gpu:$sg:4:1.4" ;;
    host_delay) echo "--fault host_delay:$hd:5:10" ;;
    extra_work) echo "--fault extra_work:$ew:6:1.5" ;;
    slow_link) echo "--fault slow_link:$h1:$h2:3:3" ;;
    two) echo "--fault slow_gpu:$sg:4:1.4 --fault host_delay:$hd:6:10" ;;
    crash) echo "--fault crash:$cr:7" ;;
    stuck) echo "--fault stuck:$st:6" ;;
  esac
}

RUNS=()
i=0
for seed in $SEEDS; do
  for si in "${!SHAPES[@]}"; do
    for fi in "${!FAULTS[@]}"; do
      f=${FAULTS[$fi]}
      if [ $MODE = quick ]; then
        # ~10 runs: the two small shapes, a few faults, every convention at least once
        [ $si -le 1 ] || continue
        case $f in healthy|slow_gpu|host_delay|crash|two) ;; *) [ $si -eq 1 ] && [ $f = extra_work ] || continue ;; esac
        RUNS+=("$seed $si $fi $(( (si + fi) % ${#CONVS[@]} ))")
      elif [ $MODE = full ]; then
        for ci in "${!CONVS[@]}"; do RUNS+=("$seed $si $fi $ci"); done
      else
        RUNS+=("$seed $si $fi $(( (si + fi + seed) % ${#CONVS[@]} ))")
      fi
    done
  done
done

for run in "${RUNS[@]}"; do
  read -r seed si fi ci <<< "$run"
  read -r sname layout gph _ sg hd ew cr st _ h1 h2 <<< "${SHAPES[$si]}"
  read -r cname copts <<< "${CONVS[$ci]}"
  f=${FAULTS[$fi]}
  dir="$OUT/${sname}_${cname}_${f}_s$seed"
  rm -rf "$dir"; mkdir -p "$dir"
  simcmd="$HERE/indep_sim.py $dir/run --layout $layout --gpus-per-host $gph --seed $seed --iters 12 --ddl-dir $DDL $copts $(fault_args $f $sg $hd $ew $cr $st $h1 $h2)"
  scancmd="$BIN $dir/run --summary $dir/s.json -o $dir/out.h5"
  echo "$simcmd" > "$dir/cmd"; echo "$scancmd" >> "$dir/cmd"
  if ! $simcmd > "$dir/sim.log" 2>&1; then
    echo -e "$sname\t$cname\t$f\t0\t0\t0\tsim-error\t$dir" >> "$RESULTS"; echo "SIM ERROR $dir"; continue
  fi
  timeout 600 $scancmd > "$dir/scan.log" 2>&1; rc=$?
  "$HERE/check_verdict.py" "$dir/s.json" "$dir/run/truth.json" --h5 "$dir/out.h5" --json "$dir/check.json" > "$dir/check.log" 2>&1
  read -r fo mi fa <<< "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['found'], d['missed'], d['false'])" "$dir/check.json" 2>/dev/null || echo "0 1 0")"
  note=ok; [ $rc -eq 0 ] || note="scan-rc=$rc"
  echo -e "$sname\t$cname\t$f\t$fo\t$mi\t$fa\t$note\t$dir" >> "$RESULTS"
  printf '%-12s %-34s %-10s found=%s missed=%s false=%s %s\n' "$sname" "$cname" "$f" "$fo" "$mi" "$fa" "$note"
  [ $KEEP = 1 ] || rm -rf "$dir/run" "$dir/out.h5"
done

python3 - "$RESULTS" <<'EOF'
import sys, collections
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1]) if l.strip()]
print()
print('%-12s %-34s %-10s %5s %6s %5s  %s' % ('shape', 'convention', 'fault', 'found', 'missed', 'false', 'note'))
tot = collections.Counter(); byf = collections.defaultdict(collections.Counter)
for s, c, f, fo, mi, fa, note, d in rows:
    print('%-12s %-34s %-10s %5s %6s %5s  %s' % (s, c, f, fo, mi, fa, note))
    for k, v in (('found', fo), ('missed', mi), ('false', fa)):
        tot[k] += int(v); byf[f][k] += int(v)
    byf[f]['runs'] += 1; byf[f]['passed'] += int(mi) == 0 and int(fa) == 0 and note == 'ok'
print()
for f, c in byf.items():
    print('%-10s runs %2d passed %2d  found %3d missed %3d false %3d' % (f, c['runs'], c['passed'], c['found'], c['missed'], c['false']))
passed = sum(c['passed'] for c in byf.values())
print('TOTAL runs %d passed %d  found %d missed %d false %d' % (len(rows), passed, tot['found'], tot['missed'], tot['false']))
sys.exit(0 if passed == len(rows) else 1)
EOF
