#!/usr/bin/env bash
# Rewrites the generated column lists of docs/hdf5-layout.md from the table declarations in
# src/tables, and scripts/scan_tables.json (the tables scripts/scan_file.py checks), with the layout_doc tool of a build folder (default: build/).
# Usage: scripts/update_layout_doc.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
cmake --build "$BUILD" --target layout_doc >/dev/null
"$BUILD/src/layout_doc" --update "$ROOT/docs/hdf5-layout.md" "$ROOT/scripts/scan_tables.json"
echo "updated $ROOT/docs/hdf5-layout.md and $ROOT/scripts/scan_tables.json"
