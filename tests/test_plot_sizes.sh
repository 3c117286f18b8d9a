#!/usr/bin/env bash
# The plot scripts read well at scale (issue 23): on a simulated 512-rank run (or 4096) with a slow
# GPU and a slow link, every PNG of every plot script is at most 2,500 px on its longer side, and
# the planted straggler is named in the blame, wait and findings plots (their tEXt chunk
# "straggler-scan:labelled", scripts/plot_stragglers.py, lists the ranks a figure names).
# Usage: SS_BUILD=/path/to/build tests/test_plot_sizes.sh [--ranks 512|4096] [--out DIR]
#   --out DIR  keep the scan and the PNGs in DIR (default: a temporary folder, removed at the end)
# 512 ranks take about a minute and 400 MB of profiles; 4096 ranks several minutes and a few GB
# (the profiles are removed as soon as they are scanned).
set -euo pipefail

: "${SS_BUILD:?set SS_BUILD to the build directory}"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=${SS_PYTHON:-/usr/bin/python3}  # needs h5py, numpy, matplotlib
SIM="$SS_BUILD/src/sim/straggler-sim"
SCAN="$SS_BUILD/src/straggler-scan"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

RANKS=512 OUT=""
while (($#)); do
  case $1 in
    --ranks) RANKS=${2:?--ranks needs 512 or 4096}; shift 2 ;;
    --out) OUT=${2:?--out needs a folder}; shift 2 ;;
    *) echo "usage: SS_BUILD=DIR $0 [--ranks 512|4096] [--out DIR]" >&2; exit 2 ;;
  esac
done
# Layout tp x pp x dp, 8 GPUs a host; the slow link joins host indices 4 and 5.
case $RANKS in
  512) LAYOUT=2x4x64 HOSTS=64 ITERATIONS=12 STRAGGLER=261 ;;
  4096) LAYOUT=2x4x512 HOSTS=512 ITERATIONS=6 STRAGGLER=2061 ;;
  *) echo "--ranks: 512 or 4096, not $RANKS" >&2; exit 2 ;;
esac

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
OUT=${OUT:-$TMP/out}
mkdir -p "$OUT"
H5="$OUT/r$RANKS.h5" PLOTS="$OUT/plots"

die() { echo "FAIL: $*" >&2; exit 1; }
elapsed() { echo "$((SECONDS - $1)) s"; }

t=$SECONDS
"$SIM" "$TMP/run" --layout "$LAYOUT" --hosts "$HOSTS" --iterations "$ITERATIONS" --seed 3 \
  --fault "slow_gpu:$STRAGGLER:1:1.3" --fault slow_link:4:5:3 >"$TMP/sim.log" 2>&1 ||
  { tail -20 "$TMP/sim.log" >&2; die "straggler-sim ($RANKS ranks)"; }
echo "ok: simulated $RANKS ranks ($(elapsed "$t"))"
t=$SECONDS
"$SCAN" "$TMP/run" -q --layout "$LAYOUT" -o "$H5" >"$TMP/scan.log" 2>&1 ||
  { tail -20 "$TMP/scan.log" >&2; die "straggler-scan ($RANKS ranks)"; }
rm -rf "$TMP/run"  # GBs at 4096 ranks
"$SCAN" compare "$H5" "$H5" -q -o "$OUT/compare.h5" >"$TMP/compare.log" 2>&1 ||
  { tail -20 "$TMP/compare.log" >&2; die "straggler-scan compare ($RANKS ranks)"; }
echo "ok: scanned ($(elapsed "$t"))"

# Every plot script; each prints the paths of the PNGs it wrote.
t=$SECONDS
: >"$TMP/printed"
for cmd in "plot_stragglers.py $H5" "plot_findings.py $H5" "plot_pipeline.py $H5" "plot_scaling.py $H5" \
           "plot_waterfall.py $H5" "plot_compare.py $OUT/compare.h5"; do
  read -r script h5 <<<"$cmd"
  "$PY" "$SRC/scripts/$script" "$h5" "$PLOTS" >"$TMP/plot.log" 2>&1 || { cat "$TMP/plot.log" >&2; die "$script"; }
  grep '\.png$' "$TMP/plot.log" >>"$TMP/printed" || die "$script printed no PNG path"
done
echo "ok: plotted ($(elapsed "$t"))"

# Sizes and labels from the PNG chunks (no PIL): IHDR holds width and height, tEXt key NUL value.
"$PY" - "$H5" "$STRAGGLER" "$PLOTS" "$TMP/printed" <<'EOF'
import glob, os, struct, sys, zlib
import h5py

MAX_PX, KEY = 2500, "straggler-scan:labelled"
MUST_NAME = ("blame_per_rank.png", "wait_heatmap.png", "findings_heatmap.png")
h5, straggler, plots, printed = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
failures = []


def chunks(path):
    """(width, height, {text key: value}) of a PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, size, text = 8, None, {}
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"tEXt":
            k, v = body.split(b"\0", 1)
            text[k.decode("latin-1")] = v.decode("latin-1")
        elif kind == b"zTXt":
            k, v = body.split(b"\0", 1)
            text[k.decode("latin-1")] = zlib.decompress(v[1:]).decode("latin-1")
        elif kind == b"iTXt":
            k, rest = body.split(b"\0", 1)
            compressed, rest = rest[0], rest[2:]
            rest = rest.split(b"\0", 2)[2]  # language tag, translated keyword
            text[k.decode("latin-1")] = (zlib.decompress(rest) if compressed else rest).decode("utf-8")
        elif kind == b"IEND":
            break
        pos += 12 + length
    return size[0], size[1], text


with h5py.File(h5, "r") as f:
    found = [int(r) for r in f["/stragglers/rank"][()]]
if straggler not in found:
    failures.append(f"the scan did not find the planted straggler rank {straggler} (stragglers: {found})")
pngs = sorted(glob.glob(os.path.join(plots, "*.png")))
listed = set(open(printed).read().split())
for path in pngs:
    name = os.path.basename(path)
    if path not in listed:
        failures.append(f"{name}: written but its path was not printed")
    try:
        w, h, text = chunks(path)
    except (ValueError, TypeError, struct.error, zlib.error) as e:
        failures.append(f"{name}: unreadable PNG ({e})")
        continue
    labelled = [int(r) for r in text.get(KEY, "").split(",") if r]
    if max(w, h) > MAX_PX:
        failures.append(f"{name}: {w} x {h} px, over {MAX_PX} px on its longer side")
    else:
        print(f"ok: {name} {w} x {h} px, names {len(labelled)} ranks")
    if name in MUST_NAME and straggler not in labelled:
        failures.append(f"{name}: straggler rank {straggler} not labelled ({KEY}: {text.get(KEY, 'missing')!r})")
for name in MUST_NAME:
    if not os.path.exists(os.path.join(plots, name)):
        failures.append(f"{name}: not written")
for line in failures:
    print("FAIL:", line, file=sys.stderr)
sys.exit(1 if failures else 0)
EOF
echo "PASS ($RANKS ranks)"
