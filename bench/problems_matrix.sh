#!/usr/bin/env bash
# Issue 37: faults spread over several ranks (a whole node, every rank) and late onsets, on each
# simulator, against the same seed written without the fault. One table row per run: what the
# first problem names, its cost, and the truth (the faulty run's mean step over the phase the cost
# is for, from the problem's onset, less the run without the fault over the same steps).
#   bench/problems_matrix.sh [--seeds "1 2 3"] [--out DIR] [--healthy N] [--big]   SS_SCAN_BIN overrides the binary
# --big: instead, the issue's two 512-rank runs (all 8 GPUs of node-25 1.5x from iteration 8;
# gc_pause:all:4:150), seed 11 unless --seeds says otherwise.
# --healthy N: instead, N seeds x 3 noise levels of straggler-sim's realistic noise (SPEC.md), each
# of which must name no problem; prints the count.
# tests/sim3's own classes and checks: tests/sim3/matrix.sh (this adds our generator and tests/indep).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${SS_SCAN_BIN:-$ROOT/build/src/straggler-scan}" SIM="$ROOT/build/src/sim/straggler-sim"
SEEDS="" OUT="${TMPDIR:-/tmp}/problems-matrix" PY=/usr/bin/python3 HEALTHY=0 BIG=0
while [ $# -gt 0 ]; do
  case "$1" in --seeds) SEEDS="$2"; shift ;; --out) OUT="$2"; shift ;; --healthy) HEALTHY="$2"; shift ;; --big) BIG=1 ;;
    *) echo "usage: $0 [--seeds S] [--out DIR] [--healthy N] [--big]" >&2; exit 2 ;; esac
  shift
done
mkdir -p "$OUT"
if [ "$HEALTHY" -gt 0 ]; then
  n=0 bad=0
  for seed in $(seq 1 "$HEALTHY"); do
    for nz in 0.15:2:0.01:0.02 0.1:5:0.01:0.02 0.05:10:0.01:0.02; do
      d="$OUT/healthy-$seed-$nz"; rm -rf "$d"
      "$SIM" "$d" --layout 2x2x4 --hosts 4 --iterations 16 --seed "$seed" --noise "$nz" --conventions random >/dev/null 2>&1
      "$BIN" "$d" --summary "$d.json" -o "$d.h5" >/dev/null 2>&1
      n=$((n + 1))
      k=$("$PY" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['problems']))" "$d.json" 2>/dev/null || echo scan-failed)
      [ "$k" = 0 ] || { bad=$((bad + 1)); echo "problem named: seed $seed noise $nz ($k)"; }
    done
  done
  echo "healthy runs with realistic noise: $n, naming a problem: $bad"
  [ "$bad" = 0 ]; exit
fi
node() { local f=""; for r in "$@"; do f="$f --fault slow_gpu:$r"; done; echo "$f"; }
# name | simulator | shared options | fault options | expected place (host name pattern or every_rank or rank)
CASES=(
  "node_onset|ours|--layout 2x2x4 --hosts 4 --iterations 12|$(node 8:3:1.3 9:3:1.3 10:3:1.3 11:3:1.3)|host"
  "node_start|ours|--layout 2x2x4 --hosts 4 --iterations 10|$(node 8:1:1.25 9:1:1.25 10:1:1.25 11:1:1.25)|host"
  "late_onset|ours|--layout 2x2x4 --hosts 4 --iterations 12|--fault slow_gpu:11:9:1.3|rank"
  "gc_all|ours|--layout 2x2x4 --hosts 4 --iterations 16|--fault gc_pause:all:4:50|every_rank"
  "node_onset|indep|--layout 2x2x4 --gpus-per-host 4|$(node 8:4:1.3 9:4:1.3 10:4:1.3 11:4:1.3)|host"
  "late_onset|indep|--layout 2x2x4 --gpus-per-host 4|--fault slow_gpu:13:9:1.3|rank"
  "gc_all|indep|--layout 2x2x4 --gpus-per-host 4 --iters 16 --cpu-lead-ms 5|--fault gc_pause:all:4:50|every_rank"
)
if [ "$BIG" = 1 ]; then
  SEEDS="${SEEDS:-11}"
  CASES=(
    "node512|ours|--layout 2x4x64 --hosts 64 --iterations 14|$(node 200:8:1.5 201:8:1.5 202:8:1.5 203:8:1.5 204:8:1.5 205:8:1.5 206:8:1.5 207:8:1.5)|host"
    "gc512|ours|--layout 2x4x64 --hosts 64 --iterations 14|--fault gc_pause:all:4:150|every_rank"
  )
fi
SEEDS="${SEEDS:-1 2 3}"
printf "| case | simulator | seed | named | cost ms/step | truth ms/step | error |\n|---|---|---|---|---|---|---|\n"
fail=0
for seed in $SEEDS; do
  for c in "${CASES[@]}"; do
    IFS='|' read -r name sim shared fault want <<<"$c"
    d="$OUT/$name-$sim-$seed"; rm -rf "$d" "$d.cf"
    if [ "$sim" = ours ]; then gen=("$SIM"); else gen=("$PY" "$ROOT/tests/indep/indep_sim.py"); fi
    "${gen[@]}" "$d" $shared --seed "$seed" $fault >/dev/null 2>&1 && "${gen[@]}" "$d.cf" $shared --seed "$seed" >/dev/null 2>&1 || { echo "| $name | $sim | $seed | generator failed | | | |"; fail=1; continue; }
    "$BIN" "$d" --summary "$d.json" -o "$d.h5" >/dev/null 2>&1 && "$BIN" "$d.cf" --summary "$d.cf.json" -o "$d.cf.h5" >/dev/null 2>&1 || { echo "| $name | $sim | $seed | scan failed | | | |"; fail=1; continue; }
    "$PY" - "$d.json" "$d.cf.json" "$d.cf.h5" "$name" "$sim" "$seed" "$want" <<'PYEOF' || fail=1
import json, sys, subprocess
s, cf = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
name, sim, seed, want = sys.argv[4:8]
ps, cps = s.get('problems') or [], cf.get('problems') or []
if not ps:
    print(f"| {name} | {sim} | {seed} | **nothing** | | | |"); sys.exit(1)
p = ps[0]
wf = s['waterfall'][-1]  # the phase the cost is for, from the problem's onset (docs/costs.md: every
# cost is since its onset); both runs' steps over the same iterations
import h5py
lo, hi = wf['from_iteration'], wf['to_iteration']
if p.get('onset_iteration') is not None and p['onset_iteration'] > lo:
    lo = p['onset_iteration']
def mean_step(path):
    f = h5py.File(path, 'r')
    per = {}
    for n, st in zip(f['/iterations/number'][()], f['/iterations/step_ms'][()]):
        if lo <= n <= hi: per.setdefault(int(n), []).append(float(st))
    return sum(sorted(v)[len(v) // 2] for v in per.values()) / len(per)
truth = mean_step(sys.argv[1][:-len('.json')] + '.h5') - mean_step(sys.argv[3])
cost = p['cost_ms_per_step']
err = (cost - truth) / truth if truth > 0 else float('nan')
ok = p['place']['kind'] == want and abs(err) <= (0.2 if want == 'every_rank' else 0.1) and not cps
label = f"{p['place']['name']} {p['cause']}" + (f" every {p['period_iterations']:.0f}" if p.get('period_iterations') else '')
print(f"| {name} | {sim} | {seed} | {label}{'' if ok else ' **FAIL**'} | {cost:.2f} | {truth:.2f} | {100 * err:+.1f}% |")
sys.exit(0 if ok else 1)
PYEOF
  done
done
exit $fail
