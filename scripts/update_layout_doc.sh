#!/usr/bin/env bash
# Rewrites the generated section of docs/hdf5-layout.md (the column lists of every table) from the
# declarations in src/tables, with the layout_doc tool of a build folder (default: build/).
# Usage: scripts/update_layout_doc.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
DOC=$ROOT/docs/hdf5-layout.md
cmake --build "$BUILD" --target layout_doc >/dev/null
GEN=$(mktemp)
trap 'rm -f "$GEN"' EXIT
"$BUILD/src/layout_doc" >"$GEN"
/usr/bin/env python3 - "$DOC" "$GEN" <<'PY'
import sys
doc_path, gen_path = sys.argv[1], sys.argv[2]
doc, gen = open(doc_path).read(), open(gen_path).read()
begin, end = gen.splitlines(keepends=True)[0], "<!-- END GENERATED -->\n"
b, e = doc.find(begin), doc.find(end)
if b < 0 or e < 0:
    sys.exit(f"{doc_path}: markers missing; add the two marker lines where the generated section goes")
open(doc_path, "w").write(doc[:b] + gen + doc[e + len(end):])
PY
"$BUILD/src/layout_doc" --check "$DOC"
echo "updated $DOC"
