#!/bin/sh
# Checks voltgate's dependencies; as root on Debian/Ubuntu installs the missing
# ones with apt-get, otherwise prints the exact command and fails.
#   VG_DEPS=all    (default) HDF5 + tools, cmocka, cJSON, gcovr, python3 +
#                  matplotlib, Open MPI
#   VG_DEPS=build  only what building and the suites need (machines without
#                  a network, like the GPU runner with DEPS_PREFIX)
#   DEPS_PREFIX    extra prefix searched for headers (usr/include under it)
set -u
mode=${VG_DEPS:-all}
prefix=${DEPS_PREFIX:-}
py=${PYTHON:-$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)}
missing=""

have_header() {
    for dir in /usr/include /usr/local/include ${prefix:+$prefix/usr/include}; do
        [ -f "$dir/$1" ] && return 0
    done
    return 1
}

have_header hdf5/serial/hdf5.h || have_header hdf5.h || missing="$missing libhdf5-dev"
have_header cmocka.h || missing="$missing libcmocka-dev"
have_header cjson/cJSON.h || missing="$missing libcjson-dev"
command -v "$py" >/dev/null 2>&1 || missing="$missing python3"
if [ "$mode" = all ]; then
    command -v h5dump >/dev/null 2>&1 || missing="$missing hdf5-tools"
    command -v gcovr >/dev/null 2>&1 || missing="$missing gcovr"
    "$py" -c 'import matplotlib' >/dev/null 2>&1 || missing="$missing python3-matplotlib"
    # Coordinated tuning is tested across ranks through Open MPI.
    have_header mpi.h || [ -f /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ] || missing="$missing libopenmpi-dev"
    command -v mpirun >/dev/null 2>&1 || missing="$missing openmpi-bin"
fi

# Optional tools: their tests say "skipped: <reason>" without them.  As root
# with apt-get (CI), they are installed on a best-effort basis; a mirror
# without them costs only those tests.
#   libbenchmark-tools + python3-scipy  google-benchmark's compare.py reading
#                                       `bench --json-format gbench`
#   chromium                            the report page's width check
#   yamllint                            the CI definitions' lint
optional_tools() {
    [ "$mode" = all ] || return 0
    opt=""
    [ -f /usr/share/benchmark/compare.py ] || opt="$opt libbenchmark-tools"
    "$py" -c 'import scipy.stats' >/dev/null 2>&1 || opt="$opt python3-scipy"
    command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || opt="$opt chromium"
    command -v yamllint >/dev/null 2>&1 || opt="$opt yamllint"
    [ -n "$opt" ] || return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        if DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $opt -qq \
            >>/tmp/voltgate-deps.log 2>&1; then
            echo "deps: installed the optional$opt"
        else
            echo "deps: optional$opt not installed (log: /tmp/voltgate-deps.log): their tests will say skipped"
        fi
    else
        echo "deps: optional, absent:$opt (their tests say skipped; apt-get install$opt)"
    fi
}

[ -z "$missing" ] && { echo "deps: all present ($mode)"; optional_tools; exit 0; }

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && $cmd -qq; } >/tmp/voltgate-deps.log 2>&1; then
        echo "deps: apt-get failed (log: /tmp/voltgate-deps.log); install by hand: sudo $cmd" >&2
        exit 1
    fi
    echo "deps: installed$missing"
    optional_tools
    exit 0
fi
echo "deps: missing$missing" >&2
echo "deps: install them with: sudo $cmd" >&2
exit 1
