#!/usr/bin/env bash
# Long fuzzing of what issue 36 hardened, under AddressSanitizer + UndefinedBehaviorSanitizer:
#   bench/fuzz_inputs.sh MINUTES [SEED]
# Builds build-sanitize when needed, then runs for MINUTES, side by side (one core each):
#   tests/fuzz/fuzz_scan.py      hostile scan files against report, compare, scaling and the scripts
#   tests/fuzz/fuzz_semantic.py  well-formed but wrong profiles (duplicates, durations, markers,
#                                host clocks, another job's rank, empty traces) against the verdict
# and prints both summaries; findings are saved under build-sanitize/fuzz-inputs-SEED/ (recorded in
# bench/RESULTS.md, "Issue 36").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
minutes="${1:?usage: bench/fuzz_inputs.sh MINUTES [SEED]}"
seed="${2:-$(date +%s)}"
BUILD="${SAN_BUILD:-$ROOT/build-sanitize}"
sanitizer_env
[ -x "$BUILD/src/straggler-scan" ] && [ -x "$BUILD/src/sim/straggler-sim" ] || build_sanitize
work="$BUILD/fuzz-inputs-$seed"
mkdir -p "$work"
echo "fuzz_inputs: seed $seed, $minutes minutes, $BUILD, results in $work"
/usr/bin/python3 "$ROOT/tests/fuzz/fuzz_scan.py" --scan "$BUILD/src/straggler-scan" --sim "$BUILD/src/sim/straggler-sim" \
  --scripts "$ROOT/scripts" --workdir "$work/scan" --corpus "$ROOT/tests/fuzz/corpus/scan" --seed "$seed" \
  --minutes "$minutes" --timeout 60 --sanitized > "$work/scan.log" 2>&1 &
scan_pid=$!
/usr/bin/python3 "$ROOT/tests/fuzz/fuzz_semantic.py" --scan "$BUILD/src/straggler-scan" --sim "$BUILD/src/sim/straggler-sim" \
  --workdir "$work/semantic" --seed "$seed" --minutes "$minutes" --timeout 180 > "$work/semantic.log" 2>&1 &
semantic_pid=$!
status=0
wait "$scan_pid" || status=$?
wait "$semantic_pid" || status=$?
for f in scan semantic; do
  echo "== $f"
  tail -n 25 "$work/$f.log"
done
exit "$status"
