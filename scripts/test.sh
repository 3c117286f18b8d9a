#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$ROOT/scripts/setup.sh"
build
cd "$BUILD"
ctest --output-on-failure -j "$JOBS" "$@"
