#!/bin/sh
# voltgate bench --json-format gbench: google-benchmark's JSON layout, which
# its compare.py reads -- "context" and "benchmarks", one "iteration" entry
# per sample of each row (name, run_type, repetitions, repetition_index,
# real_time, time_unit), our bandwidth fields as counters, the samples those
# of our own format.  Our format stays the default.
set -u
TOOL=${VG_TOOL:-build/bin/voltgate}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$TOOL" bench --backend cpu --quick --tokens 1,2 --json-format gbench --json "$TMP/g.json" >"$TMP/out" 2>"$TMP/err" ||
    { echo "bench --json-format gbench: exit $?: $(cat "$TMP/err")"; exit 1; }
"$TOOL" bench --backend cpu --quick --tokens 1,2 --json "$TMP/o.json" >"$TMP/out" 2>"$TMP/err" ||
    { echo "bench --json: exit $?: $(cat "$TMP/err")"; exit 1; }
"$TOOL" bench --backend cpu --quick --json-format xml --json "$TMP/x.json" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc = 2 ] && grep -q -- "--json-format takes ours or gbench, not 'xml'" "$TMP/err" ||
    { echo "--json-format xml: exit $rc, want 2 naming the option: $(cat "$TMP/err")"; exit 1; }
$PY - "$TMP/g.json" "$TMP/o.json" <<'PYEOF' || exit 1
import json, sys
g, o = (json.load(open(p)) for p in sys.argv[1:3])
assert "rows" in o and "benchmarks" not in o, "our format is not the default: " + str(sorted(o))
assert set(g) == {"context", "benchmarks"}, sorted(g)
ctx = g["context"]
for key in ("date", "host_name", "executable", "num_cpus", "library_build_type", "backend",
            "copy_bandwidth_gbs", "policy_hash"):
    assert key in ctx, "context lacks " + key
names = [r["name"] for r in o["rows"]]
by_name = {}
for e in g["benchmarks"]:
    for key in ("name", "run_type", "repetitions", "repetition_index", "real_time", "cpu_time",
                "time_unit", "iterations"):
        assert key in e, f"{e.get('name')}: no {key}"
    assert e["run_type"] == "iteration" and e["time_unit"] == "us", e
    by_name.setdefault(e["name"], []).append(e)
assert sorted(by_name) == sorted(names), (sorted(by_name), sorted(names))
for r in o["rows"]:
    entries = by_name[r["name"]]
    n = len(r["samples_us"])
    assert n >= 9, f"{r['name']}: {n} samples, too few for a U test"
    assert len(entries) == n and all(e["repetitions"] == n for e in entries), r["name"]
    assert sorted(e["repetition_index"] for e in entries) == list(range(n)), r["name"]
    times = sorted(e["real_time"] for e in entries)
    assert all(t > 0 for t in times), r["name"]
    if r["kind"] == "kernel":
        assert all(0 < e["bandwidth_fraction"] and e["bytes_per_second"] > 0 for e in entries), r["name"]
print(f"gbench: {len(g['benchmarks'])} entries for {len(names)} rows")
PYEOF
