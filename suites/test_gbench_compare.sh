#!/bin/sh
# google-benchmark's own compare.py (Debian libbenchmark-tools, with
# python3-scipy for its U test) reads two `voltgate bench --json-format
# gbench` files unchanged: every row compared, a U test per row over every
# sample.  Skips, saying why, where compare.py or scipy is absent.
set -u
TOOL=${VG_TOOL:-build/bin/voltgate}
PY=${PYTHON:-/usr/bin/python3}
COMPARE=${GBENCH_COMPARE:-/usr/share/benchmark/compare.py}
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
[ -f "$COMPARE" ] || { echo "skipped: no $COMPARE (apt-get install libbenchmark-tools)"; exit 77; }
"$PY" -c 'import scipy.stats' 2>/dev/null ||
    { echo "skipped: compare.py's U test needs scipy (apt-get install python3-scipy)"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for run in a b; do
    "$TOOL" bench --backend cpu --quick --tokens 1 --json-format gbench --json "$TMP/$run.json" \
        >"$TMP/out" 2>"$TMP/err" || { echo "bench: exit $?: $(cat "$TMP/err")"; exit 1; }
done
"$PY" "$COMPARE" --no-color benchmarks "$TMP/a.json" "$TMP/b.json" >"$TMP/cmp" 2>&1 ||
    { echo "compare.py failed: $(tail -5 "$TMP/cmp")"; exit 1; }
rows=$("$PY" -c 'import json,sys; print(len({b["name"] for b in json.load(open(sys.argv[1]))["benchmarks"]}))' "$TMP/a.json")
tests=$(grep -c '_pvalue .*U Test, Repetitions: 24 vs 24' "$TMP/cmp")
[ "$tests" = "$rows" ] || { echo "compare.py ran $tests U tests over $rows rows:"; cat "$TMP/cmp"; exit 1; }
grep -q '^g4n256k512/grouped/fp8/t1/tune=off ' "$TMP/cmp" || { echo "no g4n256k512/grouped row:"; cat "$TMP/cmp"; exit 1; }
echo "compare.py: $tests rows compared, each with its U test"
