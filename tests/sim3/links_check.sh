#!/bin/bash
# A healthy 2x2x4 run whose files are named report1..16 (rank numbers say nothing of the topology):
# every one of its 20 communicators is found, the 8 pipeline links included. A link's streams had
# chance candidates among lock-stepped streams of other pipelines, refused as clashing, and were
# never tried against their true peer (p2p_links.cpp: the search of everyone for streams left with
# no link). SS_SCAN_BIN overrides the binary.
set -eu
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="${SS_SCAN_BIN:-$HERE/../../build/src/straggler-scan}"
D="$(mktemp -d)"
trap 'rm -rf "$D"' EXIT
/usr/bin/python3 "$HERE/sim3.py" "$D/run" --seed 3 --conventions random --layout 2x2x4 --iterations 10 --layers 1 \
  --microbatches 8 --fault extra_work --no-fault >/dev/null 2>&1
"$BIN" "$D/run" --summary "$D/s.json" -q -o "$D/o.h5"
n=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['communicators'])" "$D/s.json")
naming=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['conventions']['naming'])" "$D/run/truth.json")
[ "$naming" = report ] || { echo "the run's naming is $naming, not report: sim3's convention draw changed" >&2; exit 1; }
[ "$n" = 20 ] || { echo "communicators found: $n, want 20" >&2; exit 1; }
echo "20 communicators found with files named report1..16"
