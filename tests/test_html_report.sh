#!/usr/bin/env bash
# scripts/report_html.py: the HTML page of a small simulated run with a straggler renders in headless
# Chromium (a screenshot, the straggler named in the DOM, plotly plots drawn after the scripts ran),
# reads offline (plotly.js inline, no external script), says "healthy" on a healthy run, escapes
# hostile strings from the file, and fails in one line with exit 2 on a missing or invalid input.
# Usage: SS_BUILD=/path/to/build tests/test_html_report.sh
# Exit 77 (ctest: skipped) without chromium or python3-plotly (scripts/setup.sh installs both).
set -euo pipefail

: "${SS_BUILD:?set SS_BUILD to the build directory}"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=${SS_PYTHON:-/usr/bin/python3}  # needs h5py, numpy, plotly
SIM="$SS_BUILD/src/sim/straggler-sim"
SCAN="$SS_BUILD/src/straggler-scan"
REPORT="$SRC/scripts/report_html.py"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[[ -n "$CHROMIUM" ]] || { echo "skipped: chromium not installed"; exit 77; }
"$PY" -c "import plotly" 2>/dev/null || { echo "skipped: python3-plotly not installed"; exit 77; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# browse OUT_PREFIX PAGE: a screenshot and the DOM after the page's scripts ran. --no-sandbox: Chromium
# refuses to run as root without it; the virtual time budget lets plotly draw before the dump.
browse() {
  local flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --no-first-run --disable-quic
               --disable-background-networking --disable-component-update --disable-sync
               --user-data-dir="$TMP/chromium-profile" --virtual-time-budget=10000)
  timeout 120 "$CHROMIUM" "${flags[@]}" --window-size=1400,2000 --screenshot="$1.png" "file://$2" \
    >"$1-shot.log" 2>&1 || { tail -5 "$1-shot.log" >&2; fail "chromium --screenshot $2"; }
  timeout 120 "$CHROMIUM" "${flags[@]}" --dump-dom "file://$2" >"$1.dom" 2>"$1-dom.log" ||
    { tail -5 "$1-dom.log" >&2; fail "chromium --dump-dom $2"; }
}

# scan_case NAME [fault args...]: simulate 32 ranks on 4 hosts, analyse, write the page.
scan_case() {
  local name=$1; shift
  "$SIM" "$TMP/$name-run" --layout 2x2x8 --hosts 4 --iterations 6 --seed 3 "$@" >"$TMP/$name-sim.log" 2>&1 ||
    { cat "$TMP/$name-sim.log" >&2; fail "$name: straggler-sim"; }
  "$SCAN" "$TMP/$name-run" -q -o "$TMP/$name.h5" >"$TMP/$name-scan.log" 2>&1 ||
    { cat "$TMP/$name-scan.log" >&2; fail "$name: straggler-scan"; }
  "$PY" "$REPORT" "$TMP/$name.h5" "$TMP/$name.html" --scan "$SCAN" >"$TMP/$name-html.log" 2>&1 ||
    { cat "$TMP/$name-html.log" >&2; fail "$name: report_html.py"; }
  [[ -s "$TMP/$name.html" ]] || fail "$name: no page"
  # Offline: plotly.js inline (over 1 MB), no <script src=...> or <link href=...>. (plotly.js itself
  # names cdn.plot.ly as the default for map outlines, which these plots never load.)
  (( $(stat -c %s "$TMP/$name.html") > 1000000 )) || fail "$name: page too small to hold plotly.js"
  if grep -qiE '<script[^>]*src=|<link[^>]*href=' "$TMP/$name.html"; then fail "$name: the page loads from outside"; fi
}

scan_case straggler --fault slow_gpu:13:1:1.4
scan_case healthy

# The straggler page renders: a real screenshot, rank 13 named, plotly's plots drawn by its scripts.
browse "$TMP/straggler" "$TMP/straggler.html"
png="$TMP/straggler.png"
[[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "screenshot is not a PNG"
(( $(stat -c %s "$png") > 30000 )) || fail "screenshot only $(stat -c %s "$png") bytes: a blank page?"
grep -q 'rank 13' "$TMP/straggler.dom" || fail "the DOM does not name rank 13"
plots=$(grep -o 'class="plot-container' "$TMP/straggler.dom" | wc -l)
(( plots >= 4 )) || fail "$plots plotly plots rendered, want 4 (waterfall, blame, step time, heatmap)"
grep -q 'class="main-svg"' "$TMP/straggler.dom" || fail "no plotly SVG in the DOM: its scripts did not run"
grep -q 'STRAGGLER rank 13' "$TMP/straggler.dom" || fail "the text report is not embedded"
echo "ok: straggler page renders ($plots plots, $(stat -c %s "$TMP/straggler.html") bytes)"

grep -q 'Healthy as far as ranks go' "$TMP/healthy.html" || fail "the healthy page does not say so"
if grep -q '<table class="verdict"' "$TMP/healthy.html"; then fail "the healthy page lists a straggler"; fi
echo "ok: healthy page"

# Hostile strings in the file (hosts, why, waterfall labels, evidence) come out as text, never markup.
"$PY" - "$TMP/straggler.h5" "$TMP/hostile.h5" <<'EOF' || fail "could not write hostile.h5"
import shutil, sys, h5py, numpy as np
shutil.copy(sys.argv[1], sys.argv[2])
evil = '<img src=x onerror="document.title=\'pwned\'"></script><script>document.title="pwned"</script>'
with h5py.File(sys.argv[2], "r+") as f:
    for path in ("/ranks/host", "/stragglers/host", "/stragglers/why", "/waterfall/label", "/findings/evidence"):
        n = len(f[path])
        del f[path]
        f[path] = np.array([f"{evil}{i}".encode() for i in range(n)], dtype=f"S{len(evil) + 8}")
EOF
"$PY" "$REPORT" "$TMP/hostile.h5" "$TMP/hostile.html" >/dev/null || fail "report_html.py on hostile strings"
if grep -q '<img src=x' "$TMP/hostile.html"; then fail "a hostile string went into the page unescaped"; fi
browse "$TMP/hostile" "$TMP/hostile.html"
if grep -qi '<img' "$TMP/hostile.dom" || grep -q '<title>pwned' "$TMP/hostile.dom"; then
  fail "a hostile string became markup in the browser"
fi
grep -q 'class="main-svg"' "$TMP/hostile.dom" || fail "the hostile page's plots did not render"
echo "ok: hostile strings escaped"

# Unusable inputs: one line on stderr, exit 2.
echo "not hdf5" >"$TMP/text.h5"
"$PY" -c "import h5py, sys; h5py.File(sys.argv[1], 'w').attrs['tool'] = 'other'" "$TMP/other.h5"
for bad in "$TMP/missing.h5" "$TMP/text.h5" "$TMP/other.h5"; do
  rc=0; "$PY" "$REPORT" "$bad" "$TMP/bad.html" >"$TMP/bad.out" 2>"$TMP/bad.err" || rc=$?
  [[ $rc -eq 2 ]] || fail "$bad: exit $rc, want 2"
  [[ $(wc -l <"$TMP/bad.err") -eq 1 ]] || { cat "$TMP/bad.err" >&2; fail "$bad: error not one line"; }
  [[ ! -e "$TMP/bad.html" ]] || fail "$bad: a page was written"
done
rc=0; "$PY" "$REPORT" >/dev/null 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "no arguments: exit $rc, want 2"
echo "ok: unusable inputs"
echo "PASS"
