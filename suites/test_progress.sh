#!/bin/sh
# Long work shows one progress line on stderr when stderr is a terminal --
# golden verify: files done / total, rows, elapsed, and which file it reads;
# bench: rows timed so far, elapsed -- and nothing extra otherwise.  The
# terminal is util-linux's `script` (a pty); without it this skips.
set -u
TOOL=${VG_TOOL:-build/bin/voltgate}
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
command -v script >/dev/null 2>&1 || { echo "skipped: no script(1) for a pseudo-terminal (util-linux)"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
verify="$TOOL golden verify --backend cpu --plan heuristic golden/cases/fp8-moe.h5 golden/cases/fp8-dense.h5"
bench="$TOOL bench --backend cpu --quick --tokens 1"
# stdout to /dev/null: the pty shows stderr alone.
script -qec "$verify >/dev/null" /dev/null >"$TMP/verify.tty" 2>&1 || { echo "verify under a pty failed"; exit 1; }
script -qec "$bench >/dev/null" /dev/null >"$TMP/bench.tty" 2>&1 || { echo "bench under a pty failed"; exit 1; }
grep -q 'golden verify: 0/2 files, 0 rows; reading golden/cases/fp8-dense.h5' "$TMP/verify.tty" &&
    grep -q 'golden verify: 1/2 files, [1-9][0-9]* rows[;(].*, [0-9.]* s' "$TMP/verify.tty" ||
    { echo "no verify progress line on a terminal: $(tr '\r\033' '|^' <"$TMP/verify.tty" | head -c 400)"; exit 1; }
grep -q 'bench: [0-9]* rows timed (last: g4n256k512/[^)]*), [0-9.]* s' "$TMP/bench.tty" ||
    { echo "no bench progress line on a terminal: $(tr '\r\033' '|^' <"$TMP/bench.tty" | head -c 400)"; exit 1; }
# Not a terminal: stderr stays empty.
$verify >/dev/null 2>"$TMP/verify.err" && $bench >/dev/null 2>"$TMP/bench.err" || { echo "a command failed"; exit 1; }
[ ! -s "$TMP/verify.err" ] && [ ! -s "$TMP/bench.err" ] ||
    { echo "progress text without a terminal: $(head -c 200 "$TMP/verify.err" "$TMP/bench.err")"; exit 1; }
echo "progress: on a terminal only"
