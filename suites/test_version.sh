#!/bin/sh
# voltgate --version and -V print the build id (the one runtime/lut.c stamps
# into LUTs: "voltgate <git describe --always --dirty>"), and every JSON the
# program writes carries it as "build": bench (ours and gbench's context),
# bench --dispatch, golden verify, replay.
set -u
TOOL=${VG_TOOL:-build/bin/voltgate}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The id is the Makefile's (git describe of the tree built); the stamp file
# may be newer than the binary when make last ran without rebuilding it, so
# the binary's own id is checked for its form, then everywhere for sameness.
want=$("$TOOL" --version 2>&1) || { echo "--version: exit $?: $want"; exit 1; }
echo "$want" | grep -Eq '^voltgate ([0-9a-f]{7,}|[^ ]+-g[0-9a-f]{7,})(-dirty)?$' ||
    { echo "--version printed '$want', want 'voltgate <git describe --always --dirty>'"; exit 1; }
got=$("$TOOL" -V 2>&1) || { echo "-V: exit $?: $got"; exit 1; }
[ "$got" = "$want" ] || { echo "-V printed '$got', --version '$want'"; exit 1; }
echo '{"sm70_runtime":{"freeze_tuning_after_warmup":false}}' >"$TMP/cfg.json"
"$TOOL" bench --backend cpu --quick --tokens 1 --paths grouped --tune off --json "$TMP/bench.json" >/dev/null 2>"$TMP/err" &&
"$TOOL" bench --backend cpu --quick --tokens 1 --paths grouped --tune off --json-format gbench \
    --json "$TMP/gbench.json" >/dev/null 2>>"$TMP/err" &&
"$TOOL" bench --dispatch --batches 9 --batch 200 --json "$TMP/dispatch.json" >/dev/null 2>>"$TMP/err" &&
"$TOOL" golden verify --plan heuristic --json "$TMP/golden.json" golden/cases/fp8-moe.h5 >/dev/null 2>>"$TMP/err" &&
"$TOOL" replay --config "$TMP/cfg.json" --layers fp8:grouped:64:128:4 --requests 20 --decode-steps 1 --json "$TMP/replay.json" \
    >/dev/null 2>>"$TMP/err" || { echo "a command failed: $(cat "$TMP/err")"; exit 1; }
$PY - "$want" "$TMP" <<'PYEOF' || exit 1
import json, os, sys
want, tmp = sys.argv[1:3]
for name in ("bench", "dispatch", "golden", "replay"):
    d = json.load(open(os.path.join(tmp, name + ".json")))
    assert d.get("build") == want, f"{name}.json: build {d.get('build')!r}, want {want!r}"
d = json.load(open(os.path.join(tmp, "gbench.json")))
assert d["context"].get("build") == want, f"gbench.json: context build {d['context'].get('build')!r}"
print(f"{want}: in --version, -V and 5 JSON files")
PYEOF
