#!/bin/sh
# voltgate replay --engines N (issue 10): each engine has its own measured
# set, so the same new shape served by two engines is measured twice (once
# per engine) and once with one engine; the per-request lines and the JSON
# name the engine; freeze on: nothing measured on any engine; usage errors.
# Counts worked out by hand from the schedule (see test_replay.sh).
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
LAYERS=fp8:grouped:64:128:4,awq:dense:64:128
run() { "$TOOL" replay "$@" >"$TMP/out" 2>"$TMP/err"; echo $? >"$TMP/rc"; }
last() { tail -n 1 "$TMP/out"; }

# Two engines, warm-up 80 shapes each.  Requests 20,1030,1050,40 go to
# engine0, engine1, engine0, engine1: 20 (new on engine0), 1030 (its 1020
# chunk: the 1024 buckets of loop and dense, new on engine1), 1050 (the
# same buckets, new on engine0, and 30), 40 (new on engine1).
run --config "$TMP/on.json" --layers $LAYERS --requests 20,1030,1050,40 --decode-steps 1 \
    --engines 2 --json "$TMP/r.json"
[ "$(cat "$TMP/rc")" = 0 ] || fail "engines 2: exit $(cat "$TMP/rc"): $(cat "$TMP/err")"
[ "$(last)" = "replay: warmup_measured=160 serving_measured=7 requests_with_new_shape=4/4" ] ||
    fail "engines 2: '$(last)'"
[ "$(grep -c '^warmup: engine=engine[01] .* measured=80 frozen=0$' "$TMP/out")" = 2 ] ||
    fail "warm-up lines: $(grep '^warmup' "$TMP/out")"
grep -q '^request 1: prompt=20 .*measured=1 new_shape=yes .* engine=engine0$' "$TMP/out" ||
    fail "request 1 line"
grep -q '^request 2: prompt=1030 .*measured=2 new_shape=yes .* engine=engine1$' "$TMP/out" ||
    fail "request 2 line"
grep -q '^request 4: prompt=40 .*measured=1 new_shape=yes .* engine=engine1$' "$TMP/out" ||
    fail "request 4 line"
$PY - "$TMP/r.json" <<'PYEOF' || fail "json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "replay" and d["warmup_measured"] == 160 and d["serving_measured"] == 7, d
assert [r["engine"] for r in d["per_request"]] == ["engine0", "engine1", "engine0", "engine1"], d
assert [r["measured"] for r in d["per_request"]] == [1, 2, 3, 1], d
PYEOF

# The same new shape on both engines: measured by each (no leak) ...
run --config "$TMP/on.json" --layers $LAYERS --requests 20,20 --decode-steps 0 --engines 2
[ "$(last)" = "replay: warmup_measured=160 serving_measured=2 requests_with_new_shape=2/2" ] ||
    fail "no leak: '$(last)'"
# ... and once with one engine.
run --config "$TMP/on.json" --layers $LAYERS --requests 20,20 --decode-steps 0 --engines 1
[ "$(last)" = "replay: warmup_measured=80 serving_measured=1 requests_with_new_shape=1/2" ] ||
    fail "one engine: '$(last)'"
# Freeze on: no engine measures while serving.
run --config "$TMP/freeze.json" --layers $LAYERS --requests 20,1030,1050,40 --engines 2
[ "$(last)" = "replay: warmup_measured=160 serving_measured=0 requests_with_new_shape=0/4" ] ||
    fail "freeze: '$(last)'"
# Usage errors.
run --config "$TMP/on.json" --layers $LAYERS --requests 20 --engines 9
[ "$(cat "$TMP/rc")" = 2 ] && grep -q -- "--engines '9': expected 1..8" "$TMP/err" ||
    fail "engines 9: rc $(cat "$TMP/rc") $(cat "$TMP/err")"
run --config "$TMP/on.json" --layers $LAYERS --requests 20 --engines 2 --lut "$TMP/x.lut"
[ "$(cat "$TMP/rc")" = 2 ] && grep -q "cannot be used with --engines" "$TMP/err" ||
    fail "lut with engines: rc $(cat "$TMP/rc") $(cat "$TMP/err")"
"$TOOL" replay --help | grep -q -- "--engines N" || fail "--help names --engines"

[ $fails = 0 ] && echo "test_replay_engines.sh: all checks passed" && exit 0
echo "$fails check(s) failed"
exit 1
