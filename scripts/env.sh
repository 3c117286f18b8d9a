# Sourced by the scripts: build directory, and what Open MPI needs on this kind of machine.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
JOBS="${JOBS:-$(nproc)}"
# Containers run as root; more MPI processes than cores need oversubscription.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Configure presets in CMakePresets.json (release, sanitize, werror); SS_WERROR=ON makes warnings
# errors (CI sets it).
build() {
  cmake -S "$ROOT" --preset release -B "$BUILD" -DSS_WERROR="${SS_WERROR:-OFF}" >/dev/null
  cmake --build "$BUILD" -j "$JOBS"
}
# AddressSanitizer + UndefinedBehaviorSanitizer build (scripts/test.sh --sanitize, scripts/fuzz.sh):
# the sanitize preset, -O1 so it is fast enough for the tests; asserts stay on (no NDEBUG).
build_sanitize() {
  cmake -S "$ROOT" --preset sanitize -B "$BUILD" >/dev/null
  cmake --build "$BUILD" -j "$JOBS"
}
# Any sanitizer report ends the process with an error; leaks of Open MPI, hwloc and HDF5 (not ours)
# are suppressed by scripts/lsan.supp.
sanitizer_env() {
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:exitcode=99:detect_leaks=1:print_stacktrace=1:strict_string_checks=1:detect_stack_use_after_return=0:fast_unwind_on_malloc=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=99"
  export LSAN_OPTIONS="suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0:exitcode=99"
}
