#!/usr/bin/env bash
# Coordinated tuning across MPI ranks (issue 8): builds
# $VG_BUILD/suites/coord_mpi_test (suites/coord.mk) when needed and runs it
# under mpirun with 2 and with 4 ranks on the cpu backend.
#
# Exit 0 pass, 1 fail, 77 skip.  It skips only when mpirun cannot be had:
# absent, and not installable (not root, no apt-get, or the install failed).
set -u
BUILD="${VG_BUILD:-build}"
BIN="$BUILD/suites/coord_mpi_test"
LIB="$BUILD/lib/libvoltgate.a"

say() { echo "test_coord_mpi: $*"; }

if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "mpirun/mpicc absent: installing openmpi-bin libopenmpi-dev"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q openmpi-bin libopenmpi-dev \
            >/dev/null 2>&1 || say "apt-get install failed"
    fi
    if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
        say "skipped: mpirun/mpicc absent and not installable (apt-get install openmpi-bin libopenmpi-dev)"
        exit 77
    fi
fi

# Build the program only.  An existing library is taken as it is (-o): this
# suite must not rebuild it with another configuration than the one the
# suites were built with; its objects tell whether that was CPU-only.
MAKE_ARGS=(--no-print-directory "BUILD=$BUILD")
if [ -f "$LIB" ]; then
    MAKE_ARGS+=(-o "$LIB")
    if ar t "$LIB" 2>/dev/null | grep -qx 'cuda_absent.o'; then
        MAKE_ARGS+=(CUDA=0)
    fi
fi
# A sanitizer or coverage build of the library (make sanitize / coverage)
# needs its runtime at link time; Open MPI's own allocations would fail
# LeakSanitizer, so leaks are checked by the cmocka suites, not here.
LINK_FLAGS=""
if [ -f "$LIB" ]; then
    syms=$(nm "$LIB" 2>/dev/null)
    if grep -q '__asan_' <<<"$syms"; then
        LINK_FLAGS="-fsanitize=address,undefined"
        export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    elif grep -q '__tsan_' <<<"$syms"; then
        LINK_FLAGS="-fsanitize=thread"
    fi
    if grep -q '__gcov_' <<<"$syms"; then
        LINK_FLAGS="$LINK_FLAGS --coverage"
    fi
    [ -n "$LINK_FLAGS" ] && MAKE_ARGS+=("LDFLAGS=$LINK_FLAGS")
fi
if ! make "${MAKE_ARGS[@]}" coord-mpi >"$BUILD/coord_mpi_build.log" 2>&1; then
    cat "$BUILD/coord_mpi_build.log"
    say "FAIL: could not build $BIN"
    exit 1
fi

status=0
for np in 2 4; do
    start=$(date +%s%N)
    timeout --kill-after=10 120 mpirun --allow-run-as-root --oversubscribe -np "$np" "$BIN"
    rc=$?
    secs=$(awk "BEGIN{printf \"%.2f\", ($(date +%s%N) - $start) / 1e9}")
    if [ "$rc" -ne 0 ]; then
        say "FAIL: $np ranks: exit status $rc after $secs s"
        status=1
    else
        say "$np ranks passed in $secs s"
    fi
done
exit $status
