#!/bin/sh
# golden info takes a folder as verify does (every *.h5 in it, in name
# order), and verify's last line names every file it could not use.
set -u
TOOL=${VG_TOOL:-build/bin/voltgate}
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$TOOL" golden info golden/cases >"$TMP/info" 2>"$TMP/err" || { echo "golden info golden/cases: exit $?: $(cat "$TMP/err")"; exit 1; }
ls golden/cases/*.h5 >"$TMP/want"
grep -o '^golden/cases/[^:]*\.h5' "$TMP/info" >"$TMP/got"
cmp -s "$TMP/want" "$TMP/got" || { echo "golden info golden/cases listed:"; diff "$TMP/want" "$TMP/got" | head; exit 1; }
echo "not a golden file" >"$TMP/bad1.h5"
echo "nor this one" >"$TMP/bad2.h5"
"$TOOL" golden verify --backend cpu --plan heuristic "$TMP/bad1.h5" golden/cases/fp8-moe.h5 "$TMP/bad2.h5" \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
last=$(tail -n 1 "$TMP/out")
[ $rc = 2 ] && [ "$last" = "5 row(s): 5 passed, 0 failed; some files could not be used: $TMP/bad1.h5, $TMP/bad2.h5" ] ||
    { echo "verify: exit $rc, last line '$last'"; exit 1; }
echo "golden info DIR lists $(wc -l <"$TMP/got") files; verify names both unusable files"
