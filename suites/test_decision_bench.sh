#!/bin/sh
# voltgate bench --dispatch: runs (briefly), prints every row and writes the
# shared bench JSON with every key, the expected decision per row, and the
# samples behind each median.  Not a speed gate: the figures go in reports.
set -u
TOOL=${VG_TOOL:-build/bin/voltgate}
PY=/usr/bin/python3
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$TOOL" bench --dispatch --batches 9 --batch 2000 --json "$TMP/b.json" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -ne 0 ]; then echo "exit $rc: $(cat "$TMP/err")"; exit 1; fi
for row in cached cached-2threads trace-line frozen-exact frozen-larger frozen-beyond; do
    grep -q "^  $row " "$TMP/out" || { echo "no $row line"; cat "$TMP/out"; exit 1; }
done
grep -q '^  trace line alone: ' "$TMP/out" || { echo "no trace line figure"; exit 1; }
$PY - "$TMP/b.json" <<'PYEOF' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
top = {"tool", "build", "backend", "gpu", "driver", "cuda_version", "arch_list", "policy_hash", "config",
       "copy_bandwidth_gbs", "rows"}
assert set(d) == top, set(d) ^ top
assert d["tool"] == "bench" and d["backend"] == "cpu"
assert len(d["policy_hash"]) == 16 and int(d["policy_hash"], 16) > 0
assert d["config"]["sm70_fp8"]["native"]["fp8_tune_small_shapes"] is True
keys = {"name", "kind", "path", "family", "m", "n", "k", "groups", "tokens", "plan", "decision",
        "samples_us", "median_us", "min_us", "max_us", "bytes", "flops", "bandwidth_fraction",
        "max_rel_rms"}
want = {"cached": "reuse", "cached-2threads": "reuse", "trace-line": "reuse",
        "frozen-exact": "reuse", "frozen-larger": "reuse", "frozen-beyond": "heuristic"}
seen = {}
for r in d["rows"]:
    assert set(r) == keys, set(r) ^ keys
    assert r["kind"] == "dispatch"
    label = r["name"].split("/")[1]
    seen[label] = r["decision"]
    s = r["samples_us"]
    assert len(s) == 9 and all(x > 0 for x in s), s
    assert r["min_us"] <= r["median_us"] <= r["max_us"]
    assert sorted(s)[4] == r["median_us"]
    assert r["plan"].startswith("cpu.")
assert seen == want, seen
PYEOF
echo "test_decision_bench: ok"
