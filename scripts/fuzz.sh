#!/usr/bin/env bash
# Long fuzzing run of the nsys readers under AddressSanitizer + UndefinedBehaviorSanitizer:
#   scripts/fuzz.sh MINUTES [SEED] [FUZZ_NSYS OPTIONS...]   (e.g. --kinds journal,links, --no-mpi)
# Builds build-sanitize when needed (one job), replays tests/fuzz/corpus, then runs fresh cases for
# MINUTES on one core and prints the case count, the mutation mix, the outcomes per case family and
# the findings; each new one is saved under build-sanitize/fuzz-SEED/findings/ (copy it into
# tests/fuzz/corpus/ to keep it). The write-fault cases use build-sanitize/tests/libwrite_faults.so
# (found by fuzz_nsys.py; skipped without it); a few run under mpirun.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
minutes="${1:?usage: scripts/fuzz.sh MINUTES [SEED] [FUZZ_NSYS OPTIONS...]}"
seed="${2:-$(date +%s)}"
shift $(( $# < 2 ? $# : 2 ))
BUILD="${SAN_BUILD:-$ROOT/build-sanitize}"
JOBS="${FUZZ_JOBS:-1}"
sanitizer_env
[ -x "$BUILD/src/straggler-scan" ] && [ -x "$BUILD/src/sim/straggler-sim" ] || build_sanitize
echo "fuzz: seed $seed, $minutes minutes, $BUILD"
exec /usr/bin/python3 "$ROOT/tests/fuzz/fuzz_nsys.py" --scan "$BUILD/src/straggler-scan" \
  --sim "$BUILD/src/sim/straggler-sim" --workdir "$BUILD/fuzz-$seed" --real "$ROOT/../shared/data/real" \
  --corpus "$ROOT/tests/fuzz/corpus" --seed "$seed" --minutes "$minutes" "$@"
