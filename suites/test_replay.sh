#!/bin/sh
# voltgate replay end to end on the cpu backend, small layers:
# the summary line (freeze off: the live-request measurements show; freeze
# on: none), the JSON record, the LUT boot, the trace, and usage errors.
# Expected counts are worked out by hand from the schedule (see below).
set -u
TOOL=${VG_TOOL:-build/bin/voltgate}
PY=/usr/bin/python3
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

echo '{"sm70_runtime":{"freeze_tuning_after_warmup":false}}' >"$TMP/on.json"
echo '{"sm70_runtime":{"freeze_tuning_after_warmup":true}}' >"$TMP/freeze.json"
# Layers: fp8 grouped (warm-up: 1..16 tokens per group = 16 shapes) and awq
# dense (M 1..64 = 64 shapes): warmup_measured=80.
# Requests with chunk 1020: 20 -> loop at 20 per group (new), 1030 -> 1020
# (above the exact limits: the 1024 bucket, new on loop and on dense) + 10
# (warmed), 1050 -> 1020 (the 1024 buckets, now measured) + 30 (new),
# 40 -> loop at 40 (new); dense M 10/20/30/40 are warmed.  So 5 shapes,
# new in 4 of 4 requests.
LAYERS=fp8:grouped:64:128:4,awq:dense:64:128
REQS=20,1030,1050,40

run() { "$TOOL" replay "$@" >"$TMP/out" 2>"$TMP/err"; echo $? >"$TMP/rc"; }
last() { tail -n 1 "$TMP/out"; }

run --config "$TMP/on.json" --layers $LAYERS --requests $REQS --decode-steps 2 --json "$TMP/r.json"
[ "$(cat "$TMP/rc")" = 0 ] || fail "freeze off: exit $(cat "$TMP/rc"): $(cat "$TMP/err")"
[ "$(last)" = "replay: warmup_measured=80 serving_measured=5 requests_with_new_shape=4/4" ] ||
    fail "freeze off summary: '$(last)'"
[ "$(grep -c '^replay:' "$TMP/out")" = 1 ] || fail "more than one summary line"
[ "$(grep -c '^request [0-9]*: prompt=' "$TMP/out")" = 4 ] || fail "per-request lines"
grep -q '^request 2: prompt=1030 .*measured=2 new_shape=yes' "$TMP/out" || fail "request 2 line"
grep -q '^request 3: prompt=1050 .*measured=1 new_shape=yes' "$TMP/out" || fail "request 3 line"

$PY - "$TMP/r.json" <<'PYEOF' || fail "json record"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "replay", d
assert (d["warmup_measured"], d["serving_measured"], d["requests_with_new_shape"], d["requests"]) == (80, 5, 4, 4), d
pr = d["per_request"]
assert [r["prompt"] for r in pr] == [20, 1030, 1050, 40]
assert [r["new_shape"] for r in pr] == [True, True, True, True]
assert [r["measured"] for r in pr] == [1, 2, 1, 1]
for r in pr:
    assert set(r) == {"prompt", "new_shape", "measured", "dispatch_us", "engine"}, r
    assert r["dispatch_us"] >= 0 and r["engine"] == "default"
PYEOF

run --config "$TMP/freeze.json" --layers $LAYERS --requests $REQS --decode-steps 2
[ "$(last)" = "replay: warmup_measured=80 serving_measured=0 requests_with_new_shape=0/4" ] ||
    fail "freeze on summary: '$(last)'"

# Trace: 85 measure lines, every line a decision line or a LUT line.
VG_GEMM_TRACE="$TMP/trace" run --config "$TMP/on.json" --layers $LAYERS --requests $REQS --decode-steps 2
[ "$(grep -c ' decision=measure ' "$TMP/trace")" = 85 ] ||
    fail "trace measure lines: $(grep -c ' decision=measure ' "$TMP/trace")"
[ "$(grep -c ' frozen=1$' "$TMP/trace")" = 0 ] || fail "frozen lines without freeze"

# LUT boot: the first boot writes it, the second measures nothing at all.
run --config "$TMP/on.json" --lut "$TMP/boot.lut" --layers $LAYERS --requests $REQS --decode-steps 2
[ "$(last)" = "replay: warmup_measured=80 serving_measured=5 requests_with_new_shape=4/4" ] ||
    fail "first boot: '$(last)'"
run --config "$TMP/on.json" --lut "$TMP/boot.lut" --layers $LAYERS --requests $REQS --decode-steps 2
[ "$(last)" = "replay: warmup_measured=0 serving_measured=0 requests_with_new_shape=0/4" ] ||
    fail "second boot: '$(last)'"
grep -q '^lut: .* applied=85 skipped_arch=0 skipped_policy=0 skipped_plan=0$' "$TMP/out" ||
    fail "lut line: $(grep '^lut:' "$TMP/out")"
echo garbage >"$TMP/bad.lut"
run --config "$TMP/on.json" --lut "$TMP/bad.lut" --layers $LAYERS --requests 5
[ "$(cat "$TMP/rc")" = 2 ] && grep -q 'not a voltgate LUT' "$TMP/err" || fail "corrupt lut: $(cat "$TMP/err")"

# Usage errors: exit 2 with a message naming the problem.
run --help
[ "$(cat "$TMP/rc")" = 0 ] && grep -q '^usage: voltgate replay' "$TMP/out" || fail "--help"
run --config "$TMP/on.json" --layers fp8:grouped:64 --requests 5
[ "$(cat "$TMP/rc")" = 2 ] && grep -q "bad layer 'fp8:grouped:64'" "$TMP/err" || fail "bad layer"
run --config "$TMP/on.json" --layers wo_b --requests 5
[ "$(cat "$TMP/rc")" = 2 ] && grep -q "bad layer 'wo_b'" "$TMP/err" || fail "bad preset"
run --config "$TMP/on.json" --layers $LAYERS --requests 5,-3
[ "$(cat "$TMP/rc")" = 2 ] && grep -q "bad prompt length '-3'" "$TMP/err" || fail "bad request"
run --layers $LAYERS --requests 5
[ "$(cat "$TMP/rc")" = 2 ] && grep -q "required" "$TMP/err" || fail "missing --config"
echo '{"sm70_runtime":{"freeze_tuning_after_warmup":"yes"}}' >"$TMP/badcfg.json"
run --config "$TMP/badcfg.json" --layers $LAYERS --requests 5
[ "$(cat "$TMP/rc")" = 2 ] &&
    grep -q 'sm70_runtime.freeze_tuning_after_warmup: expected boolean, got "yes"' "$TMP/err" ||
    fail "bad config: $(cat "$TMP/err")"
run --config "$TMP/on.json" --layers $LAYERS --requests 5 --chunk 0
[ "$(cat "$TMP/rc")" = 2 ] || fail "--chunk 0"
# The wo_a preset parses (on cuda it runs; without a device it is a skip, 77).
run --config "$TMP/on.json" --layers wo_a --requests 5 --decode-steps 1 --backend cuda
rc=$(cat "$TMP/rc")
[ "$rc" = 0 ] || [ "$rc" = 77 ] || fail "wo_a on cuda: exit $rc: $(cat "$TMP/err")"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "test_replay: all checks passed"
