#!/bin/sh
# A bad number names its option and the range it must be in:
# `golden gen --n 0` says "--n must be an integer from 1 to ...", and so
# for --k, --groups, --m and --tokens (exit 2).
set -u
TOOL=${VG_TOOL:-build/bin/voltgate}
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
expect() {   # expect MESSAGE ARGS...
    want=$1; shift
    "$TOOL" golden gen "$@" -o "$TMP/x.h5" >/dev/null 2>"$TMP/err"
    rc=$?
    [ $rc = 2 ] && grep -qF -- "$want" "$TMP/err" ||
        { echo "golden gen $*: exit $rc, want 2 and '$want': $(cat "$TMP/err")"; exit 1; }
}
expect "--n must be an integer from 1 to " --family fp8 --path dense --n 0 --k 128
expect "--k must be an integer from 1 to " --family fp8 --path dense --n 64 --k -3
expect "--groups must be an integer from 1 to " --family fp8 --path grouped --groups x
expect "--m must be row counts from 1 to " --family fp8 --path dense --m 1,0
expect "--tokens must be one token count from 0 to " --family fp8 --path grouped --tokens 1,2
echo "golden gen: every bad number named with its option"
