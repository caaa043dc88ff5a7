#!/bin/sh
# One backend default everywhere: bench, golden verify and replay without
# --backend run "auto" (cuda when a CUDA device is present, else cpu), say so
# on their first line ("backend: cpu (auto: no CUDA device)") and write the
# backend that ran into their JSON.  An explicit --backend is printed too.
set -u
TOOL=${VG_TOOL:-build/bin/voltgate}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo '{"sm70_runtime":{"freeze_tuning_after_warmup":false}}' >"$TMP/cfg.json"
check() {   # name, then the command
    name=$1; shift
    "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
    rc=$?
    [ $rc = 0 ] || { echo "$name: exit $rc, want 0 with the auto backend: $(tail -3 "$TMP/$name.err")"; exit 1; }
    first=$(head -n 1 "$TMP/$name.out")
    case "$first" in
        "backend: cpu (auto: no CUDA device)"|"backend: cuda (auto: a CUDA device is present)") ;;
        *) echo "$name: first line '$first', want 'backend: cpu|cuda (auto: ...)'"; exit 1 ;;
    esac
    echo "${first#backend: }" | cut -d' ' -f1 >"$TMP/$name.backend"
}
check bench "$TOOL" bench --quick --tokens 1 --paths grouped --tune off --json "$TMP/bench.json"
check verify "$TOOL" golden verify --plan heuristic --json "$TMP/verify.json" golden/cases/fp8-moe.h5
check replay "$TOOL" replay --config "$TMP/cfg.json" --layers fp8:grouped:64:128:4 --requests 20 \
    --decode-steps 1 --json "$TMP/replay.json"
$PY - "$TMP" <<'PYEOF' || exit 1
import json, os, sys
tmp = sys.argv[1]
def used(name):
    return open(os.path.join(tmp, name + ".backend")).read().strip()
assert json.load(open(os.path.join(tmp, "bench.json")))["backend"] == used("bench")
assert {r["backend"] for r in json.load(open(os.path.join(tmp, "verify.json")))["rows"]} == {used("verify")}
assert json.load(open(os.path.join(tmp, "replay.json")))["backend"] == used("replay")
PYEOF
"$TOOL" bench --backend cpu --quick --tokens 1 --paths grouped --tune off >"$TMP/cpu.out" 2>&1 &&
    [ "$(head -n 1 "$TMP/cpu.out")" = "backend: cpu" ] ||
    { echo "bench --backend cpu: first line '$(head -n 1 "$TMP/cpu.out")', want 'backend: cpu'"; exit 1; }
"$TOOL" replay --config "$TMP/cfg.json" --layers fp8:grouped:64:128:4 --requests 20 --backend gpu \
    >/dev/null 2>"$TMP/bad.err"
[ $? = 2 ] && grep -q "unknown backend 'gpu' (auto, cpu or cuda)" "$TMP/bad.err" ||
    { echo "replay --backend gpu: $(cat "$TMP/bad.err")"; exit 1; }
echo "auto backend: bench $(cat "$TMP/bench.backend"), verify $(cat "$TMP/verify.backend"), replay $(cat "$TMP/replay.backend")"
