#!/bin/bash
# matrix.sh [--quick|--full] [--seeds "1 2 3"] [--out DIR] [--jobs N] [--known FILE] [--only REGEX]
# Runs classes x seeds x conventions through sim3.py -> straggler-scan -> check.py and prints a
# table; writes DIR/results.tsv. Exit 0 only if every case passes; with --known FILE (case names
# that fail today, one per line, '#' comments), exit 0 only if exactly those fail: a new failure
# is a regression, and a known one that passes must leave the list.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
PY=/usr/bin/python3
MODE=quick
SEEDS=""
OUT=""
JOBS=2
KNOWN=""
ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) MODE=quick ;;
    --full) MODE=full ;;
    --seeds) SEEDS="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    --jobs) JOBS="$2"; shift ;;
    --known) KNOWN="$2"; shift ;;
    --only) ONLY="$2"; shift ;;
    -h|--help) sed -n 2,4p "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
BIN="${SS_SCAN_BIN:-$HERE/../../build/src/straggler-scan}"
OUT="${OUT:-/tmp/sim3-matrix-$MODE-$$}"
mkdir -p "$OUT"
export PY HERE BIN OUT

# wait for the binary if someone is rebuilding it
for i in $(seq 1 30); do [ -x "$BIN" ] && break; sleep 5; done
[ -x "$BIN" ] || { echo "no straggler-scan binary at $BIN (SS_SCAN_BIN overrides)" >&2; exit 2; }

# one case: NAME CLASS SEED CONV SIMARGS...
run_one() {
  [ $# -ge 4 ] && [ -n "$1" ] || return 0
  name="$1"; cls="$2"; seed="$3"; conv="$4"; shift 4
  d="$OUT/$name"
  rm -rf "$d" "$d.cf"
  mkdir -p "$d.log"
  local cfargs=()
  case "$cls" in healthy*|pipe_*|crash|hang) ;; *) cfargs=(--with-counterfactual "$d.cf") ;; esac
  local convargs=()
  [ "$conv" = plain ] && convargs=(--conventions plain)
  [ "$conv" = random ] && convargs=(--conventions random)
  local t0=$(date +%s.%N)
  if ! $PY "$HERE/sim3.py" "$d" --seed "$seed" "${convargs[@]}" "${cfargs[@]}" "$@" >"$d.log/sim.txt" 2>&1; then
    printf '%s\t%s\t-\t%s\t%s\t-\tSIMFAIL\t-\t-\t%s\n' "$name" "$cls" "$seed" "$conv" "$(tail -1 "$d.log/sim.txt")" >"$d.log/row.tsv"
    return
  fi
  for x in 1 2 3; do
    [ -x "$BIN" ] && break; sleep 10
  done
  "$BIN" "$d" --summary "$d.log/s.json" -o "$d.log/o.h5" -q >"$d.log/scan.txt" 2>&1
  local rc=$?
  local cfs=()
  if [ ${#cfargs[@]} -gt 0 ]; then
    "$BIN" "$d.cf" --summary "$d.log/cf.json" -o "$d.log/cf.h5" -q >"$d.log/scan_cf.txt" 2>&1
    cfs=(--cf-summary "$d.log/cf.json")
  fi
  local res
  if [ $rc -ne 0 ] || [ ! -s "$d.log/s.json" ]; then
    res=SCANFAIL; echo "scan exit $rc: $(tail -2 "$d.log/scan.txt")" >"$d.log/check.txt"
  else
    $PY "$HERE/check.py" "$d.log/s.json" "$d/truth.json" "${cfs[@]}" >"$d.log/check.txt" 2>&1 && res=PASS || res=FAIL
  fi
  local t1=$(date +%s.%N)
  $PY - "$d/truth.json" "$d.log/s.json" "$d.log/check.txt" "$name" "$cls" "$seed" "$conv" "$res" "$t0" "$t1" >"$d.log/row.tsv" <<'EOF'
import json, sys
tp, sp, ck, name, cls, seed, conv, res, t0, t1 = sys.argv[1:]
T = json.load(open(tp))
try:
    S = json.load(open(sp))
except Exception:
    S = {}
c = T['conventions']
cs = '%s/%s/%s/%s/nvtx=%s/%s' % (c['naming'], c['p2p'], c['schema'], c['nccl_names'], int(c['nccl_nvtx']), c['iter_marker'])
if T['layout']['order'] != 'tp-dp-pp':
    cs += '/' + T['layout']['order']
true_cost = ';'.join('%.1f' % f['cost_ms_per_step'] for f in T['faults'] if f.get('cost_ms_per_step') is not None) or '-'
probs = S.get('problems') or []
meas = ';'.join('%s:%.1f' % (p.get('cause'), p.get('cost_ms_per_step') or 0) for p in probs) or '-'
if not probs:
    st = S.get('stragglers') or []
    sl = S.get('slow_links') or []
    alt = ['s%d:%s:%.1f' % (x['rank'], x['cause'], x.get('cost_ms_per_step') or 0) for x in st[:3]] + \
          ['link%s:%.1f' % ('+'.join(x.get('hosts') or []), x.get('cost_ms_per_step') or 0) for x in sl[:2]]
    if alt:
        meas = '(no problems; ' + ','.join(alt) + ')'
fails = [l.split()[0] + ' ' + l.split()[1] for l in open(ck) if l.split() and l.split()[0] in ('missed', 'false', 'wrong')]
lay = T['layout']
print('\t'.join([name, cls, str(T['ranks']), seed, cs, '%dx%dx%d' % (lay['tp'], lay['pp'], lay['dp']), res, meas, true_cost,
                 '; '.join(fails)[:400], '%.0f' % (float(t1) - float(t0))]))
EOF
}
export -f run_one

CASES="$OUT/cases.txt"
: >"$CASES"
add() { echo "$*" >>"$CASES"; }

Q16="--layout 2x2x4 --iterations 8 --layers 1 --microbatches 4"
if [ "$MODE" = quick ]; then
  SEEDS="${SEEDS:-1 2}"
  for s in $SEEDS; do
    for conv in plain random; do
      add "healthy-$s-$conv healthy $s $conv $Q16"
      add "slow_gpu-$s-$conv slow_gpu $s $conv $Q16 --fault slow_gpu"
      add "node-$s-$conv node $s $conv $Q16 --fault node"
      add "slow_link-$s-$conv slow_link $s $conv $Q16 --fault slow_link"
      add "host_delay-$s-$conv host_delay $s $conv $Q16 --fault host_delay"
      add "extra_work-$s-$conv extra_work $s $conv $Q16 --fault extra_work"
      add "stall-$s-$conv stall $s $conv $Q16 --fault stall"
      add "crash-$s-$conv crash $s $conv $Q16 --fault crash"
      add "hang-$s-$conv hang $s $conv $Q16 --fault hang"
      add "multi-$s-$conv multi $s $conv $Q16 --fault slow_gpu --fault host_delay"
    done
    add "pipe_interleaved-$s pipe_interleaved $s plain --layout 1x4x4 --schedule interleaved --microbatches 8 --iterations 6 --layers 1"
    add "pipe_gpipe-$s pipe_gpipe $s plain --layout 1x4x4 --schedule gpipe --microbatches 8 --iterations 6 --layers 1"
    add "pipe_1f1b_tppd-$s pipe_1f1b $s random --layout 2x4x2 --order tp-pp-dp --schedule 1f1b --microbatches 8 --iterations 6 --layers 1"
  done
else
  SEEDS="${SEEDS:-1 2 3}"
  for s in $SEEDS; do
    for conv in plain random; do
      for lay in "2x2x4" "2x4x8"; do
        A="--layout $lay --iterations 10 --layers 1 --microbatches 8"
        t="$lay"
        add "healthy-$t-$s-$conv healthy $s $conv $A"
        add "slow_gpu-$t-$s-$conv slow_gpu $s $conv $A --fault slow_gpu"
        add "node-$t-$s-$conv node $s $conv $A --fault node"
        add "slow_link-$t-$s-$conv slow_link $s $conv $A --fault slow_link"
        add "host_delay-$t-$s-$conv host_delay $s $conv $A --fault host_delay"
        add "extra_work-$t-$s-$conv extra_work $s $conv $A --fault extra_work"
        add "stall-$t-$s-$conv stall $s $conv $A --fault stall"
        add "crash-$t-$s-$conv crash $s $conv $A --fault crash"
        add "hang-$t-$s-$conv hang $s $conv $A --fault hang"
        add "multi-$t-$s-$conv multi $s $conv $A --fault slow_gpu --fault slow_link"
      done
      add "pipe_interleaved-$s-$conv pipe_interleaved $s $conv --layout 2x4x2 --schedule interleaved --microbatches 8 --iterations 8 --layers 1"
      add "pipe_gpipe-$s-$conv pipe_gpipe $s $conv --layout 1x4x4 --schedule gpipe --microbatches 8 --iterations 8 --layers 1"
      add "order-$s-$conv healthy_order $s $conv --layout 2x2x4 --order random --iterations 8 --layers 1"
    done
  done
  # many cheap healthy runs across shapes and conventions
  for s in $(seq 100 149); do
    case $((s % 5)) in
      0) A="--layout 2x2x2 --microbatches 4" ;; 1) A="--layout 4x1x4" ;; 2) A="--layout 1x2x4 --microbatches 4" ;;
      3) A="--layout 2x1x8" ;; 4) A="--layout 1x4x2 --schedule random --microbatches 8" ;;
    esac
    add "healthy_cheap-$s healthy_cheap $s random $A --iterations 6 --layers 1"
  done
  # scale: 512 and 4096 ranks, light model
  add "slow_gpu_512-1 slow_gpu 1 random --layout 8x4x16 --gpus-per-host 8 --iterations 6 --layers 1 --microbatches 4 --fault slow_gpu:?:3:1.4 --conv naming=rank"
  add "healthy_4096-1 healthy 1 plain --layout 8x4x128 --gpus-per-host 8 --iterations 5 --layers 1 --microbatches 4"
fi

# --only: the cases whose name matches REGEX (a subset to iterate on)
if [ -n "$ONLY" ]; then grep -E "^[^ ]*($ONLY)" "$CASES" >"$CASES.only" || true; mv "$CASES.only" "$CASES"; fi
echo "sim3 matrix ($MODE): $(wc -l <"$CASES") cases, results under $OUT" >&2
T0=$(date +%s)
# big runs alone (memory), the rest JOBS at a time
grep -E '_(512|4096)-' "$CASES" >"$OUT/big.txt" || true
grep -vE '_(512|4096)-' "$CASES" >"$OUT/small.txt" || true
xargs -r -P "$JOBS" -L 1 bash -c 'run_one "$@"' _ <"$OUT/small.txt"
xargs -r -P 1 -L 1 bash -c 'run_one "$@"' _ <"$OUT/big.txt"
T1=$(date +%s)

TSV="$OUT/results.tsv"
printf 'case\tclass\tranks\tseed\tconventions\tlayout\tresult\tmeasured_cost(tool)\ttrue_cost\tfailed_checks\tseconds\n' >"$TSV"
while read -r line; do
  name=$(echo "$line" | cut -d' ' -f1)
  if [ -s "$OUT/$name.log/row.tsv" ]; then cat "$OUT/$name.log/row.tsv" >>"$TSV"; else printf '%s\t-\t-\t-\t-\t-\tNORESULT\t-\t-\t-\t-\n' "$name" >>"$TSV"; fi
done <"$CASES"
$PY - "$TSV" <<'EOF'
import sys
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1])]
hdr, rows = rows[0], rows[1:]
w = [max(len(r[i]) if i < len(r) else 0 for r in [hdr] + rows) for i in range(len(hdr))]
w = [min(x, 60) for x in w]
for r in [hdr] + rows:
    print('  '.join((r[i] if i < len(r) else '')[:w[i]].ljust(w[i]) for i in (1, 2, 3, 4, 6, 7, 8)) + '  ' + (r[9] if len(r) > 9 else ''))
n = len(rows); p = sum(1 for r in rows if len(r) > 6 and r[6] == 'PASS')
print('\n%d/%d cases pass' % (p, n))
EOF
echo "results: $TSV ($((T1 - T0)) s)"
if [ -n "$KNOWN" ]; then
  $PY - "$TSV" "$KNOWN" <<'EOF'
import sys
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1])][1:]
known = {l.split('#')[0].strip() for l in open(sys.argv[2])} - {''}
failed = {r[0] for r in rows if len(r) < 7 or r[6] != 'PASS'}
ran = {r[0] for r in rows}
new, fixed = sorted(failed - known), sorted((known & ran) - failed)
for c in new:
    print('REGRESSION: %s fails and is not in %s' % (c, sys.argv[2]))
for c in fixed:
    print('NOW PASSES: %s; take it out of %s' % (c, sys.argv[2]))
if not new and not fixed:
    print('known failures: %d of %d cases, as listed' % (len(failed), len(rows)))
sys.exit(1 if new or fixed else 0)
EOF
  exit $?
fi
if grep -qvP '\tPASS\t' <(tail -n +2 "$TSV"); then exit 1; fi
exit 0
