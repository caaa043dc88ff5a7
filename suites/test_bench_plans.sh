#!/bin/sh
# voltgate bench --plan: every plan that applies is timed on every row,
# forced past the decision ("forced" in the JSON), each checked against the
# reference; one named plan gives only its rows, a list each row its own
# path's of those named; an unknown plan is a usage
# error that names it; a row over --max-rel-rms fails the run.  CPU backend,
# --quick: not a speed gate.
set -u
TOOL=${VG_TOOL:-build/bin/voltgate}
PY=/usr/bin/python3
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$TOOL" plans --backend cpu >"$TMP/plans" 2>&1 || { echo "voltgate plans failed"; exit 1; }
"$TOOL" bench --backend cpu --quick --shape wo_a,dense --plan all --json "$TMP/all.json" \
    >"$TMP/all.out" 2>"$TMP/all.err" || { echo "--plan all: exit $?: $(cat "$TMP/all.err")"; exit 1; }
grep -q "plans forced" "$TMP/all.out" || { echo "no forced table"; cat "$TMP/all.out"; exit 1; }
$PY - "$TMP/all.json" "$TMP/plans" "$TMP/all.out" <<'PYEOF' || exit 1
import json, sys, collections
d = json.load(open(sys.argv[1]))
listed = open(sys.argv[2]).read()
printed = open(sys.argv[3]).read()
kernel = [r for r in d["rows"] if r["kind"] == "kernel"]
assert kernel, "no kernel rows"
by_row = collections.defaultdict(set)
for r in kernel:
    assert r["decision"] == "forced", r["decision"]
    assert r["name"].endswith("/plan=" + r["plan"]), (r["name"], r["plan"])
    assert r["plan"] in listed, r["plan"]
    assert r["max_rel_rms"] is not None and r["max_rel_rms"] < 1e-2, (r["name"], r["max_rel_rms"])
    assert r["min_us"] <= r["median_us"] <= r["max_us"]
    assert r["plan"] in printed, r["plan"]
    by_row[(r["name"].rsplit("/plan=", 1)[0])].add(r["plan"])
# every row ran more than one plan, and no plan twice
assert all(len(p) > 1 for p in by_row.values()), by_row
assert len(kernel) == sum(len(p) for p in by_row.values())
paths = {r["path"] for r in kernel}
assert {"loop", "grouped", "dense"} <= paths, paths
# Every row, copy rows too, has the string keys reports/SCHEMA.md requires
# (the copy row once lost "family": -1 through an unsigned enum test).
for r in d["rows"]:
    for key in ("name", "kind", "path", "family", "decision"):
        assert isinstance(r.get(key), str), (r.get("name"), key, r.get(key))
copy = [r for r in d["rows"] if r["kind"] == "copy"]
assert copy and all(r["family"] == "n/a" and r["path"] == "n/a" for r in copy), copy
# The stream ceiling is a CUDA measurement: the CPU bench leaves it null, never made up.
for r in d["rows"]:
    assert r["stream_ceiling_us"] is None and r["ceiling_fraction"] is None, r["name"]
PYEOF
one=$($PY -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["rows"] if r["kind"]=="kernel" and r["path"]=="dense"][0]["plan"])' "$TMP/all.json")
"$TOOL" bench --backend cpu --quick --shape dense --plan "$one" --json "$TMP/one.json" >"$TMP/one.out" 2>&1 \
    || { echo "--plan $one: exit $?"; cat "$TMP/one.out"; exit 1; }
$PY - "$TMP/one.json" "$one" <<'PYEOF' || exit 1
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["kind"] == "kernel"]
assert rows and all(r["plan"] == sys.argv[2] and r["decision"] == "forced" for r in rows), rows
PYEOF
# A list: each row gets the named plans of its own path, and only those.
two=$($PY -c 'import json,sys; print(",".join(sorted({r["plan"] for r in json.load(open(sys.argv[1]))["rows"] if r["kind"]=="kernel" and r["path"]=="dense"})[:2]))' "$TMP/all.json")
grp=$($PY -c 'import json,sys; print(sorted({r["plan"] for r in json.load(open(sys.argv[1]))["rows"] if r["kind"]=="kernel" and r["path"]=="grouped"})[0])' "$TMP/all.json")
"$TOOL" bench --backend cpu --quick --shape wo_a,dense --tokens 1 --plan "$two,$grp" --json "$TMP/list.json" \
    >"$TMP/list.out" 2>&1 || { echo "--plan $two,$grp: exit $?"; cat "$TMP/list.out"; exit 1; }
$PY - "$TMP/list.json" "$two" "$grp" <<'PYEOF' || exit 1
import json, sys, collections
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["kind"] == "kernel"]
dense, grouped = set(sys.argv[2].split(",")), {sys.argv[3]}
assert len(dense) == 2, dense
by_row = collections.defaultdict(set)
for r in rows:
    assert r["decision"] == "forced", r
    by_row[(r["path"], r["name"].rsplit("/plan=", 1)[0])].add(r["plan"])
assert by_row, "no rows"
assert {p for p, _ in by_row} == {"loop", "grouped", "dense"}, by_row
for (path, _), plans in by_row.items():
    assert plans == (grouped if path == "grouped" else dense), (path, plans)
PYEOF
for bad in "$one,no.such.plan" "$one,,$one" "$one,"; do
    "$TOOL" bench --backend cpu --quick --plan "$bad" >"$TMP/bad.out" 2>"$TMP/bad.err"
    rc=$?
    [ $rc -eq 2 ] || { echo "--plan $bad: exit $rc, want 2"; exit 1; }
done
grep -q "plan '': the cpu backend has no" "$TMP/bad.err" || { echo "empty id not named: $(cat "$TMP/bad.err")"; exit 1; }
"$TOOL" bench --backend cpu --quick --plan no.such.plan >"$TMP/bad.out" 2>"$TMP/bad.err"
rc=$?
[ $rc -eq 2 ] || { echo "unknown plan: exit $rc, want 2"; exit 1; }
grep -q "no.such.plan" "$TMP/bad.err" || { echo "unknown plan not named: $(cat "$TMP/bad.err")"; exit 1; }
# The output check gates the run: the same plan with a limit no row can
# meet fails (exit 1), names the row and its plan, and still writes the JSON.
"$TOOL" bench --backend cpu --quick --shape dense --tokens 1 --tune off --max-rel-rms 1e-9 \
    --json "$TMP/strict.json" >"$TMP/strict.out" 2>"$TMP/strict.err"
rc=$?
[ $rc -eq 1 ] || { echo "--max-rel-rms 1e-9: exit $rc, want 1"; exit 1; }
grep -q "dense/fp8/m1/tune=off: output check failed" "$TMP/strict.err" \
    || { echo "failed row not named: $(cat "$TMP/strict.err")"; exit 1; }
[ -s "$TMP/strict.json" ] || { echo "no JSON after a failed check"; exit 1; }
"$TOOL" bench --backend cpu --quick --max-rel-rms -1 >/dev/null 2>"$TMP/neg.err"
[ $? -eq 2 ] || { echo "--max-rel-rms -1: want usage exit 2"; exit 1; }
echo "test_bench_plans: ok"
