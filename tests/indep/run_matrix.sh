#!/bin/bash
# Independent test matrix for straggler-scan: simulate (tests/indep/indep_sim.py), analyse, check.
#   tests/indep/run_matrix.sh [--quick | --full | --extras | --pipeline | --scaling | --what-if] [--seeds "1 2"] [--out DIR] [--keep]
# SS_SCAN_BIN: the straggler-scan binary (default: build/src/straggler-scan of this checkout).
# SS_DDL_DIR : folder with the nsys DDL dumps (default ../shared/docs/nsys-ddl next to the checkout).
# Default: each shape x fault once, conventions rotating, plus the EXTRAS below; --full: every convention
# too, plus the PIPELINE list; --quick: ~10 runs plus the EXTRAS marked '*'; --extras: the EXTRAS only;
# --pipeline: the PIPELINE list only (pipeline schedules and bubble truth, a few minutes on 2 cores).
# --scaling: the SCALING families only (tests/indep/indep_scaling.py, runs of 64-512 ranks): each run scanned to .h5,
# then `straggler-scan scaling ... --topology` and tests/indep/check_scaling.py; one results line per family.
# --what-if: the WHATIF cases only: each faulty run and its counterfactuals (the same seed and options without one
# fault, and without all of them when there are several) scanned, then tests/indep/check_what_if.py per pair;
# one results line per pair (~1 minute per seed on 2 cores).
# --kineto: the simulator writes PyTorch profiler (Kineto) JSON traces instead of nsys SQLite (indep_sim.py
# --format kineto; README.md "Kineto output"); grid, extras, pipeline and what-if runs (not --scaling).
# Exit 0 when every run passed its checks, 1 otherwise, 77 when the DDL dumps or the binary are absent.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BIN="${SS_SCAN_BIN:-$REPO/build/src/straggler-scan}"
DDL="${SS_DDL_DIR:-$(cd "$REPO/.." && pwd)/shared/docs/nsys-ddl}"
MODE=default SEEDS="1" OUT="${TMPDIR:-/tmp}/indep-matrix" KEEP=0 FMT=
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) MODE=quick ;; --full) MODE=full ;; --extras) MODE=extras ;; --pipeline) MODE=pipeline ;; --keep) KEEP=1 ;;
    --scaling) MODE=scaling ;; --what-if) MODE=whatif ;; --kineto) FMT="--format kineto" ;;
    --seeds) SEEDS="$2"; shift ;; --out) OUT="$2"; shift ;;
    *) echo "usage: $0 [--quick|--full|--extras|--pipeline|--scaling|--what-if] [--seeds \"1 2\"] [--out DIR] [--keep] [--kineto]" >&2; exit 2 ;;
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
# Runs outside the shape x fault grid: name | simulator options ('*': also in --quick). See README.md.
EXTRAS=(
  # overlapped DP buckets (--dp-overlap): hangs at both schemas and both file layouts
  "*ovl-crash_rank-3.25|--layout 2x2x4 --layers 6 --dp-overlap --cpu-lead-ms 15 --fault crash:6:7 --files rank --schema 3.25"
  "ovl-crash_host-3.25|--layout 2x2x4 --layers 6 --dp-overlap --fault crash:6:7 --files host --schema 3.25 --markers"
  "*ovl-crash_rank-3.0|--layout 2x2x4 --layers 6 --dp-overlap --cpu-lead-ms 15 --fault crash:9:6 --files rank --schema 3.0 --naming hostname"
  "ovl-crash_host-3.0|--layout 2x1x8 --gpus-per-host 8 --layers 4 --dp-overlap --dp-bucket-layers 2 --cpu-lead-ms 20 --fault crash:5:5 --files host --schema 3.0 --dp-mode rsag"
  "ovl-stuck_rank-3.25|--layout 2x2x4 --layers 4 --dp-overlap --cpu-lead-ms 10 --fault stuck:13:8"
  "ovl-healthy|--layout 2x2x4 --layers 6 --dp-overlap --cpu-lead-ms 15"
  "ovl-slow_gpu|--layout 2x2x4 --layers 4 --dp-overlap --fault slow_gpu:6:4:1.3"
  # small host delays (2-3% of a ~150-200 ms step) and noisier kernels
  "*host_delay-2.5pct|--layout 2x2x4 --layers 3 --fault host_delay:3:5:4"
  "host_delay-2.5pct-noisy|--layout 2x1x8 --gpus-per-host 8 --layers 6 --jitter 5 --fault host_delay:9:4:4"
  "healthy-noisy|--layout 2x2x4 --jitter 6"
  # findings: tiny-kernel storms, one-shot JIT captures, bracketed NCCL, copy-fed bubbles, GC pauses
  "*tiny_kernels|--layout 2x2x4 --fault tiny_kernels:5:300"
  "tiny_kernels-all+markers|--layout 1x1x8 --fault tiny_kernels:all:200 --markers"
  "*oneshot-1gpu-tiny|--layout 1x1x1 --gpus-per-host 1 --one-shot --fault tiny_kernels:0:200"
  "oneshot-8gpu-host-3.0|--layout 2x1x4 --gpus-per-host 8 --one-shot --files host --schema 3.0"
  "*nccl_bracketed|--layout 2x1x4 --layers 4 --grad-mb 60 --act-mb 8 --fault nccl_bracketed:all"
  "copy_bubbles-1gpu|--layout 1x1x1 --gpus-per-host 1 --iters 8 --fault copy_bubbles:all:1024"
  "copy_bubbles-rank|--layout 2x2x4 --fault copy_bubbles:5:2048:4"
  "*pageable_h2d|--layout 2x2x4 --fault pageable_h2d:9:48:3"
  "*gc_pause|--layout 2x2x4 --cpu-lead-ms 5 --fault gc_pause:3:3:40"
  "gc_pause-small-3.0|--layout 2x1x8 --gpus-per-host 8 --cpu-lead-ms 5 --fault gc_pause:6:2:12 --schema 3.0"
  # short (3-iteration) captures of larger jobs
  "short3-256-slow_gpu|--layout 4x4x16 --gpus-per-host 8 --iters 3 --files host --fault slow_gpu:77:0:1.4"
  "short3-512-ovl-crash|--layout 8x4x16 --gpus-per-host 8 --iters 3 --dp-overlap --cpu-lead-ms 15 --fault crash:300:2"
  "short3-128-healthy-3.0|--layout 8x2x8 --gpus-per-host 8 --iters 3 --schema 3.0"
)
# Pipeline schedules and bubble truth (truth.json `pipeline`): name | simulator options. PP=4 runs are one host
# of 8 GPUs (TP1 x PP4 x DP2), 2 layers per stage, 4 MiB activations, stages balanced (--balanced-stages) unless
# said otherwise (pp4-1f1b-head: the last stage 17% heavier; slow_p2p: 16 MiB so that the transfers weigh); the
# truth bubble of the balanced ones is within 0.02 of (P-1)/(V M) (README.md).
PIPE="--gpus-per-host 8 --iters 5 --act-mb 4"
PIPELINE=(
  "pp4-1f1b|--layout 1x4x2 $PIPE --microbatches 8 --balanced-stages --schedule 1f1b"
  "pp4-gpipe|--layout 1x4x2 $PIPE --microbatches 8 --balanced-stages --schedule gpipe"
  "pp4-interleaved-v2|--layout 1x4x2 $PIPE --microbatches 8 --balanced-stages --schedule interleaved --virtual-stages 2"
  "pp4-1f1b-stage_imbalance|--layout 1x4x2 $PIPE --microbatches 8 --balanced-stages --fault stage_imbalance:3:1.35"
  "pp4-1f1b-slow_gpu|--layout 1x4x2 $PIPE --microbatches 8 --balanced-stages --fault slow_gpu:4:0:1.3 --iters 8"
  "pp4-1f1b-slow_p2p|--layout 1x4x2 $PIPE --microbatches 8 --balanced-stages --fault slow_p2p:3 --act-mb 16"
  "pp8-m32-stage_imbalance|--layout 1x8x2 $PIPE --microbatches 32 --balanced-stages --fault stage_imbalance:5:1.25"
  "pp4-interleaved-v2-stage_imbalance|--layout 1x4x2 $PIPE --microbatches 8 --balanced-stages --schedule interleaved --virtual-stages 2 --fault stage_imbalance:1:1.3"
  "pp4-gpipe-slow_gpu|--layout 1x4x2 $PIPE --microbatches 8 --balanced-stages --schedule gpipe --fault slow_gpu:3:0:1.3 --iters 8"
  "pp4-1f1b-head|--layout 1x4x2 $PIPE --microbatches 8"
  "tp2pp4-interleaved-host-3.0|--layout 2x4x2 $PIPE --microbatches 8 --balanced-stages --schedule interleaved --virtual-stages 2 --files host --schema 3.0 --markers"
)

# Scaling families (README.md, "Scaling families"): name | indep_scaling.py options. Runs of 64, 128, 256, 512 ranks.
SCALING=(
  "pod|--scenario pod --payloads"
  "pod-nopayloads|--scenario pod"
  "flat|--scenario flat"
  "small|--scenario small --payloads"
  "slowlink|--scenario slowlink"
  "seed|--scenario seed"
)
SCALES="64 128 256 512"

if [ $MODE = scaling ]; then
  for seed in $SEEDS; do
    for x in "${SCALING[@]}"; do
      name=${x%%|*}; opts=${x#*|}
      dir="$OUT/scaling_${name}_s$seed"
      rm -rf "$dir"; mkdir -p "$dir"; t0=$(date +%s)
      simcmd="$HERE/indep_scaling.py $dir/fam --seed $seed --ddl-dir $DDL $opts"
      echo "$simcmd" > "$dir/cmd"
      if ! $simcmd > "$dir/sim.log" 2>&1; then
        echo -e "$name\t$seed\t0\t1\t0\t0\tsim-error\t0\t$dir" >> "$RESULTS"; echo "SIM ERROR $dir"; continue
      fi
      note=ok; h5s=(); vm=0; vf=0
      for n in $SCALES; do                   # each run scanned once; its own verdict checked for information
        timeout 600 "$BIN" "$dir/fam/n$n" -o "$dir/n$n.h5" --summary "$dir/n$n.json" -q > "$dir/scan_n$n.log" 2>&1 \
          || note="scan-n$n-rc=$?"
        h5s+=("$dir/n$n.h5")
        "$HERE/check_verdict.py" "$dir/n$n.json" "$dir/fam/n$n/truth.json" --h5 "$dir/n$n.h5" --json "$dir/verdict_n$n.json" \
          > "$dir/verdict_n$n.log" 2>&1
        read -r mi fa <<< "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['missed'], d['false'])" \
          "$dir/verdict_n$n.json" 2>/dev/null || echo "1 0")"
        vm=$((vm + mi)); vf=$((vf + fa))
      done
      scalcmd="$BIN scaling ${h5s[*]} --topology $dir/fam/topology.txt -o $dir/scaling.h5 --summary $dir/scaling.json"
      echo "$scalcmd" >> "$dir/cmd"
      timeout 600 $scalcmd > "$dir/scaling.log" 2>&1; rc=$?
      [ $rc -eq 0 ] || note="scaling-rc=$rc"
      "$HERE/check_scaling.py" "$dir/scaling.json" "$dir/fam/scaling_truth.json" --json "$dir/check.json" > "$dir/check.log" 2>&1
      read -r pa fl <<< "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['pass'], d['fail'])" \
        "$dir/check.json" 2>/dev/null || echo "0 1")"
      secs=$(( $(date +%s) - t0 ))
      echo -e "$name\t$seed\t$pa\t$fl\t$vm\t$vf\t$note\t$secs\t$dir" >> "$RESULTS"
      printf '%-15s seed %-3s checks pass=%-3s fail=%-3s run verdicts missed=%s false=%s %-16s %4ss %s\n' \
        "$name" "$seed" "$pa" "$fl" "$vm" "$vf" "$note" "$secs" "$(grep -m1 '^FAIL' "$dir/check.log" | cut -c1-80)"
      [ $KEEP = 1 ] || rm -rf "$dir"/fam/n* "$dir"/*.h5
    done
  done
  python3 - "$RESULTS" <<'EOF'
import sys
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1]) if l.strip()]
print()
print('%-15s %4s %5s %5s %7s %6s %5s  %s' % ('family', 'seed', 'pass', 'fail', 'missed', 'false', 'secs', 'note'))
ok = 0
for name, seed, pa, fl, vm, vf, note, secs, d in rows:
    print('%-15s %4s %5s %5s %7s %6s %5s  %s' % (name, seed, pa, fl, vm, vf, secs, note))
    ok += int(fl) == 0 and note == 'ok'
print('TOTAL families %d passed %d  (missed/false: the single-run verdict checks of their runs, for information)' % (
    len(rows), ok))
sys.exit(0 if ok == len(rows) else 1)
EOF
  exit $?
fi

# What-if counterfactual family (README.md, "What-if counterfactuals"): name | simulator options | faults. For each
# case the faulty run, then one counterfactual per fault (the same run without that fault: the truth for fixing
# its rank) and, with several faults, one without any (the truth for fixing all of them together).
WI="--gpus-per-host 4 --iters 12"
WHATIF=(
  "slow_gpu|--layout 2x2x4 $WI|slow_gpu:13:4:1.3"
  "slow_gpu-host-3.0-markers|--layout 2x2x4 $WI --files host --schema 3.0 --markers|slow_gpu:13:4:1.3"
  "host_delay|--layout 2x2x4 $WI|host_delay:3:4:10"
  "extra_work|--layout 2x2x4 $WI|extra_work:9:4:1.5"
  "two|--layout 2x2x4 $WI|slow_gpu:13:4:1.3 host_delay:3:6:10"
  "late_onset|--layout 2x2x4 --gpus-per-host 4 --iters 14|slow_gpu:6:10:1.3"
  "no_pp-2x1x8|--layout 2x1x8 --gpus-per-host 8 --iters 12|slow_gpu:5:4:1.3"
  "dp_overlap|--layout 2x2x4 $WI --layers 4 --dp-overlap|slow_gpu:6:4:1.3"
)

if [ $MODE = whatif ]; then
  for seed in $SEEDS; do
    for x in "${WHATIF[@]}"; do
      IFS='|' read -r name opts faults <<< "$x"
      dir="$OUT/whatif_${name}_s$seed"
      rm -rf "$dir"; mkdir -p "$dir"; t0=$(date +%s)
      fl=($faults)
      variants=("faulty|${fl[*]}")                  # label | faults kept
      for i in "${!fl[@]}"; do
        kept=(); for j in "${!fl[@]}"; do [ $j = $i ] || kept+=("${fl[$j]}"); done
        variants+=("no_$(cut -d: -f1,2 <<< "${fl[$i]}" | tr ':' '_')|${kept[*]}")
      done
      [ ${#fl[@]} -gt 1 ] && variants+=("no_faults|")
      note=ok
      for v in "${variants[@]}"; do
        IFS='|' read -r lab keep <<< "$v"
        fargs=""; for f in $keep; do fargs="$fargs --fault $f"; done
        simcmd="$HERE/indep_sim.py $dir/$lab --seed $seed --ddl-dir $DDL $FMT $opts$fargs"
        echo "$simcmd" >> "$dir/cmd"
        $simcmd > "$dir/sim_$lab.log" 2>&1 || { note="sim-error-$lab"; break; }
        for try in 1 2 3 4 5 6 7 8 9; do [ -x "$BIN" ] && break; sleep 10; done   # another session may be relinking it
        timeout 600 "$BIN" "$dir/$lab" --summary "$dir/$lab.json" -o "$dir/$lab.h5" -q > "$dir/scan_$lab.log" 2>&1 \
          || note="scan-$lab-rc=$?"
      done
      for v in "${variants[@]:1}"; do
        lab=${v%%|*}
        "$HERE/check_what_if.py" "$dir/faulty.json" "$dir/$lab.json" "$dir/faulty/truth.json" --cf-truth "$dir/$lab/truth.json" \
          --json "$dir/check_$lab.json" > "$dir/check_$lab.log" 2>&1
        python3 - "$dir/check_$lab.json" "$name" "$seed" "$lab" "$note" "$(( $(date +%s) - t0 ))" "$dir" >> "$RESULTS" <<'PYROW'
import json, sys
p, name, seed, lab, note, secs, d = sys.argv[1:]
try:
    c = json.load(open(p))
except (OSError, ValueError):
    c = {'pass': 0, 'fail': 1}
def f(k):
    v = c.get(k)
    return '%.3f' % v if isinstance(v, (int, float)) else '-'
print('\t'.join([name, seed, lab, ','.join(map(str, c.get('fix', []))) or '-', f('step_ms_actual'), f('row_step'),
                 f('cf_step'), f('err_pct'), str(c['pass']), str(c['fail']), note, secs, d]))
PYROW
        tail -n1 "$RESULTS" | awk -F'\t' '{printf "%-26s seed %-2s %-18s fix %-5s faulty %8s what-if %8s counterfactual %8s err %6s%% pass=%s fail=%s %s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11}'
        grep '^FAIL' "$dir/check_$lab.log" | cut -c1-220
      done
      [ $KEEP = 1 ] || rm -rf "$dir"/*/ "$dir"/*.h5
    done
  done
  python3 - "$RESULTS" <<'PYSUM'
import sys
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1]) if l.strip()]
print()
print('%-26s %4s %-18s %-5s %9s %9s %9s %7s %4s %4s  %s' % ('case', 'seed', 'counterfactual', 'fix', 'faulty', 'what-if',
                                                          'cf-truth', 'err%', 'pass', 'fail', 'note'))
ok = 0
for name, seed, lab, fix, fa, wi, cf, err, pa, fl, note, secs, d in rows:
    print('%-26s %4s %-18s %-5s %9s %9s %9s %7s %4s %4s  %s' % (name, seed, lab, fix, fa, wi, cf, err, pa, fl, note))
    ok += fl == '0' and note == 'ok'
errs = [abs(float(r[7])) for r in rows if r[7] != '-']
print('TOTAL pairs %d passed %d  |error| max %.2f%% mean %.2f%%  (faulty: what_if.step_ms_actual; cf-truth: the run '
      'without the fault, measured by the simulator over the same iterations)' % (
          len(rows), ok, max(errs or [0]), sum(errs) / max(1, len(errs))))
sys.exit(0 if ok == len(rows) else 1)
PYSUM
  exit $?
fi

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
  if [ $MODE = pipeline ] || [ $MODE = full ]; then
    for pi in "${!PIPELINE[@]}"; do RUNS+=("$seed p $pi -"); done
  fi
  [ $MODE = pipeline ] && continue
  for xi in "${!EXTRAS[@]}"; do
    x=${EXTRAS[$xi]}
    if [ $MODE = quick ]; then [ "${x:0:1}" = "*" ] || continue; fi
    # Kineto traces have no nsys conventions to vary: a crash, GC pauses and a kernel storm suffice
    # in ctest (CI's 45 minutes); the full matrix runs every extra.
    if [ $MODE = quick ] && [ -n "$FMT" ]; then
      case "${x#\*}" in ovl-crash_rank-3.25\|*|gc_pause\|*|tiny_kernels\|*) ;; *) continue ;; esac
    fi
    RUNS+=("$seed x $xi -")
  done
  [ $MODE = extras ] && continue
  for si in "${!SHAPES[@]}"; do
    for fi in "${!FAULTS[@]}"; do
      f=${FAULTS[$fi]}
      if [ $MODE = quick ]; then
        # ~10 runs: the two small shapes, a few faults, every convention at least once
        [ $si -le 1 ] || continue
        case $f in healthy|slow_gpu|host_delay|crash|two) ;; *) [ $si -eq 1 ] && [ $f = extra_work ] || continue ;; esac
        # Kineto: each fault on one of the two shapes (the conventions are nsys's)
        if [ -n "$FMT" ]; then
          case "$si:$f" in 0:healthy|0:host_delay|1:slow_gpu|1:two|1:crash|1:extra_work) ;; *) continue ;; esac
        fi
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
  if [ "$si" = p ]; then                     # a pipeline run: name | options
    x=${PIPELINE[$fi]}
    sname=pipeline; cname=${x%%|*}; f=healthy
    case "${x#*|}" in *"--fault "*) f=$(sed 's/.*--fault \([a-z_0-9]*\).*/\1/' <<< "${x#*|}") ;; esac
    dir="$OUT/pipe_${cname}_s$seed"
    simcmd="$HERE/indep_sim.py $dir/run --seed $seed --ddl-dir $DDL $FMT ${x#*|}"
  elif [ "$si" = x ]; then                   # an extra run: name | options
    x=${EXTRAS[$fi]}; x=${x#\*}
    sname=extra; cname=${x%%|*}; f=${cname%%-*}
    dir="$OUT/extra_${cname}_s$seed"
    simcmd="$HERE/indep_sim.py $dir/run --seed $seed --ddl-dir $DDL $FMT ${x#*|}"
    case " ${x#*|} " in *" --iters "*) ;; *) simcmd="$simcmd --iters 12" ;; esac
  else
    read -r sname layout gph _ sg hd ew cr st _ h1 h2 <<< "${SHAPES[$si]}"
    read -r cname copts <<< "${CONVS[$ci]}"
    f=${FAULTS[$fi]}
    dir="$OUT/${sname}_${cname}_${f}_s$seed"
    simcmd="$HERE/indep_sim.py $dir/run --layout $layout --gpus-per-host $gph --seed $seed --iters 12 --ddl-dir $DDL $FMT $copts $(fault_args $f $sg $hd $ew $cr $st $h1 $h2)"
  fi
  rm -rf "$dir"; mkdir -p "$dir"
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
