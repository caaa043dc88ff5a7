#!/bin/bash
# test_regress.sh: ci/regress wiring, driven with a fake voltgate binary
# (BUILD points at a temp folder whose bin/voltgate writes fixed JSON in the
# shared formats), results into a temp VG_HISTORY: nothing touches
# reports/history.  Checks: the last line is exactly "report: <page>", the
# page and one record per run exist, the record holds the tools' rows and
# names what did not run (no CUDA device), a failing golden case is named
# (exit 0: the report was written; 1 with VG_REGRESS_STRICT=1), a tool that is "not built yet" is reported, not faked, and
# ci/nightly exits 0 on unchanged timings and 1 on a 20 % slowdown.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vg-regress-test.XXXXXX")
trap '[ -n "${VG_KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

mkdir -p "$tmp/build/bin"
cat > "$tmp/build/bin/voltgate" <<'EOF'
#!/bin/bash
# A stand-in voltgate: FAKE_MODE=ok|golden-fail|bench-row-fail|not-built|cuda
# (cuda: a device is present; each CUDA bench call's arguments go to
# $FAKE_ARGS_LOG).
mode=${FAKE_MODE:-ok}
cmd=$1; [ "$cmd" = golden ] && { shift; cmd="golden-$1"; }
shift
[ "$mode" = cuda ] && [ -n "${FAKE_ARGS_LOG:-}" ] && [ "$cmd" = bench ] && echo "$*" >> "$FAKE_ARGS_LOG"
json=""; backend=cpu; family=fp8
while [ $# -gt 0 ]; do
    case $1 in
    --json) json=$2; shift ;;
    --backend) backend=$2; shift ;;
    --family) family=$2; shift ;;
    --help) [ "$mode" = not-built ] && [ "$cmd" != golden-verify ] && { echo "voltgate $cmd: not built yet" >&2; exit 2; }
            echo "usage: voltgate $cmd"; exit 0 ;;
    esac
    shift
done
[ "$mode" = not-built ] && [ "$cmd" != golden-verify ] && { echo "voltgate $cmd: not built yet" >&2; exit 2; }
samples="10.0,10.1,10.2,10.05,10.15,9.95,10.3,10.0,10.1,10.2"
median=10.1
[ -n "${FAKE_SLOW:-}" ] && samples="12.0,12.1,12.2,12.05,12.15,11.95,12.3,12.0,12.1,12.2" median=12.1
case $cmd in
golden-verify)
    [ "$backend" = cuda ] && [ "$mode" != cuda ] && { echo "skipped: no CUDA device"; exit 77; }
    v=PASS; [ "$mode" = golden-fail ] && v=FAIL
    printf '{"tool":"golden-verify","rows":[{"case":"fp8-dense","file":"golden/cases/fp8-dense.h5","family":"fp8","path":"dense","m":1,"n":256,"k":384,"groups":1,"tokens":1,"backend":"%s","plan":"%s.dense.a","rel_rms":1e-4,"max_abs":1e-3,"tol_rel_rms":1e-3,"tol_max_abs":0.05,"verdict":"%s"}]}\n' "$backend" "$backend" "$v" > "$json"
    [ "$v" = PASS ] ;;
bench)
    printf '{"tool":"bench","backend":"'"$backend"'","gpu":null,"driver":null,"cuda_version":null,"arch_list":null,"policy_hash":"00000000000000ff","config":{},"copy_bandwidth_gbs":20.0,"rows":[' > "$json"
    for p in grouped loop; do
        [ $p = loop ] && printf ',' >> "$json"
        printf '{"name":"g4n256k512/%s/%s/t6/tune=on","kind":"kernel","path":"%s","family":"%s","m":24,"n":256,"k":512,"groups":4,"tokens":6,"plan":"p","decision":"measure","samples_us":[%s],"median_us":%s,"min_us":9.95,"max_us":12.3,"bytes":524288,"flops":6291456,"bandwidth_fraction":null,"max_rel_rms":1e-4}' $p "$family" $p "$family" "$samples" "$median" >> "$json"
    done
    printf ']}\n' >> "$json"
    [ "$mode" = bench-row-fail ] && { echo "voltgate bench: g4n256k512/grouped/fp8/t6/tune=on: output check failed" >&2; exit 1; }
    true ;;
replay)
    printf '{"tool":"replay","warmup_measured":34,"serving_measured":0,"requests_with_new_shape":2,"requests":3,"per_request":[{"prompt":12,"new_shape":true,"measured":0,"dispatch_us":1.5,"engine":"default"},{"prompt":12,"new_shape":false,"measured":0,"dispatch_us":1.2,"engine":"default"},{"prompt":1500,"new_shape":true,"measured":0,"dispatch_us":2.5,"engine":"default"}]}\n' > "$json" ;;
*) echo "fake voltgate: $cmd?" >&2; exit 2 ;;
esac
EOF
chmod +x "$tmp/build/bin/voltgate"

run() {   # run MODE: runs ci/regress, leaves its output in $tmp/out and exit in $rc
    FAKE_MODE=$1 VG_REGRESS_STRICT=${VG_REGRESS_STRICT:-0} BUILD="$tmp/build" PYTHON="$py" VG_HISTORY="$tmp/history" VG_REPORT_DIR="$tmp/html" \
        VG_RUNNER=ci1 bash "$here/ci/regress" > "$tmp/out" 2>&1
    rc=$?
}
last_line() { tail -n 1 "$tmp/out"; }
newest() { ls -1t "$tmp/history"/*.json | head -n 1; }

run ok
[ "$rc" = 0 ] || { fail "ok run: exit $rc"; tail -20 "$tmp/out"; }
[ "$(last_line)" = "report: $tmp/html/index.html" ] || fail "ok run: last line '$(last_line)'"
[ -s "$tmp/html/index.html" ] || fail "no index.html"
[ "$(ls "$tmp/history"/*.json 2>/dev/null | wc -l)" = 1 ] || fail "want 1 record after one run"
"$py" - "$(newest)" <<'EOF' || fail "record content"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["runner"] == "ci1", r["runner"]
assert len(r["bench"]) == 2 and len(r["bench"][0]["samples_us"]) == 10, r["bench"]
assert r["bench"][0]["bandwidth_fraction"] is not None
assert len(r["golden"]) == 1 and r["golden"][0]["verdict"] == "PASS"
assert r["replay"]["serving_measured"] == 0
assert any("no CUDA device" in m for m in r["missing"]), r["missing"]
EOF

run golden-fail
[ "$rc" = 0 ] || fail "golden-fail run: exit $rc, want 0 (the report was written)"
grep -q "regress: .*ATTENTION" "$tmp/out" || fail "golden-fail run: no ATTENTION line"
[ "$(last_line)" = "report: $tmp/html/index.html" ] || fail "golden-fail run: last line '$(last_line)'"
grep -q "PASS->FAIL" "$tmp/out" || fail "golden-fail run: no PASS->FAIL row printed"
[ "$(ls "$tmp/history"/*.json | wc -l)" = 2 ] || fail "want 2 records after two runs"

# A bench row that fails its output check (exit 1, JSON written): the rows
# stay in the record and the failure is named, not hidden or dropped.
run bench-row-fail
[ "$rc" = 0 ] || fail "bench-row-fail run: exit $rc, want 0 (the report was written)"
grep -q "bench-cpu: a row FAILED" "$tmp/out" || fail "bench-row-fail run: no FAILED line"
"$py" - "$(newest)" <<'EOF' || fail "bench-row-fail record content"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["bench"]) == 2, r["bench"]
assert any("a row failed" in m for m in r["missing"]), r["missing"]
EOF

# With a CUDA device: every family's CUDA bench runs the grouped (its three
# paths, moe with even and skewed routing), dense and crossover shapes
# (issue 31's targets come from the crossover rows).
export FAKE_ARGS_LOG="$tmp/cuda-bench-args"
run cuda
unset FAKE_ARGS_LOG
[ "$rc" = 0 ] || { fail "cuda run: exit $rc"; tail -20 "$tmp/out"; }
[ "$(grep -c -- '--backend cuda' "$tmp/cuda-bench-args")" = 5 ] || fail "cuda run: want 5 CUDA bench calls"
for fam in fp8 fp16 awq mxfp4 nvfp4; do
    grep -q -- "--backend cuda --family $fam --shape wo_a,dense,crossover --tokens 1,2,4,6,8,16,32,64 --paths loop,grouped,moe --routing even,skewed " "$tmp/cuda-bench-args" ||
        fail "cuda run: no crossover bench for $fam: $(cat "$tmp/cuda-bench-args")"
done

VG_REGRESS_STRICT=1 run not-built
[ "$rc" = 1 ] || fail "strict not-built run: exit $rc, want 1"
[ "$(last_line)" = "report: $tmp/html/index.html" ] || fail "not-built run: last line '$(last_line)'"
grep -q "NOT RUN: bench: 'voltgate bench' is not built yet" "$tmp/out" || fail "not-built run: bench not named"
"$py" - "$(newest)" <<'EOF' || fail "not-built record content"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["bench"] == [] and r["replay"] is None, "a tool that is not built left data"
assert any("not built yet" in m for m in r["missing"]), r["missing"]
EOF
grep -q "not built yet" "$tmp/html/index.html" || fail "the page does not say what is not built"

# ci/nightly: make regress (a stand-in make runs ci/regress), then the report
# against the record that was last before it: exit 0, then 1 when slower.
mkdir -p "$tmp/fakebin"
printf '#!/bin/bash\nfor a in "$@"; do [ "$a" = regress ] && exec bash "%s/ci/regress"; done\nexit 0\n' "$here" \
    > "$tmp/fakebin/make"
chmod +x "$tmp/fakebin/make"
nightly() {   # nightly [SLOW]: leaves output in $tmp/nout, exit in $rc
    FAKE_SLOW=${1:-} FAKE_MODE=ok PATH="$tmp/fakebin:$PATH" BUILD="$tmp/build" PYTHON="$py" \
        VG_HISTORY="$tmp/nhistory" VG_REPORT_DIR="$tmp/nhtml" bash "$here/ci/nightly" > "$tmp/nout" 2>&1
    rc=$?
}
nightly
[ "$rc" = 0 ] || { fail "nightly first run: exit $rc"; tail -20 "$tmp/nout"; }
grep -q "baseline record: none (first run)" "$tmp/nout" || fail "nightly first run: baseline not 'none'"
[ "$(tail -n 1 "$tmp/nout")" = "report: $tmp/nhtml/index.html" ] || fail "nightly: last line '$(tail -n 1 "$tmp/nout")'"
first=$(ls "$tmp/nhistory"/*.json)
nightly
[ "$rc" = 0 ] || { fail "nightly on unchanged timings: exit $rc"; tail -20 "$tmp/nout"; }
grep -q "baseline record: $first" "$tmp/nout" || fail "nightly: baseline is not the last record"
nightly slow
[ "$rc" = 1 ] || { fail "nightly with a 20 % slowdown: exit $rc, want 1"; tail -20 "$tmp/nout"; }
grep -q "| g4n256k512/grouped/fp8/t6/tune=on | cpu |" "$tmp/nout" || fail "nightly: the slow row is not in the table"
grep -q "nightly: REGRESSED" "$tmp/nout" || fail "nightly: no REGRESSED line"

# A night whose CUDA side did not run, after one where it did: not a pass.
VG_HISTORY="$tmp/vhistory" FAKE_MODE=cuda BUILD="$tmp/build" PYTHON="$py" VG_REPORT_DIR="$tmp/vhtml" \
    bash "$here/ci/regress" >"$tmp/vout" 2>&1 || { fail "regress with CUDA: exit $?"; tail -5 "$tmp/vout"; }
FAKE_MODE=ok PATH="$tmp/fakebin:$PATH" BUILD="$tmp/build" PYTHON="$py" VG_HISTORY="$tmp/vhistory" \
    VG_REPORT_DIR="$tmp/vhtml" bash "$here/ci/nightly" >"$tmp/nout" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "VANISHED: the baseline ran .* rows on cuda; the latest run has none there" "$tmp/nout" ||
    { fail "nightly after the CUDA side vanished: exit $rc, want 1 and a VANISHED line"; tail -8 "$tmp/nout"; }

# make regress that fails before any record (a build, a dependency): the
# nightly says so and exits 1, blaming no report.
mkdir -p "$tmp/fakebin2"
printf '#!/bin/bash\necho "make: *** [all] Error 2" >&2\nexit 2\n' > "$tmp/fakebin2/make"
chmod +x "$tmp/fakebin2/make"
PATH="$tmp/fakebin2:$PATH" BUILD="$tmp/build" PYTHON="$py" VG_HISTORY="$tmp/nhistory" VG_REPORT_DIR="$tmp/nhtml" \
    bash "$here/ci/nightly" >"$tmp/nout" 2>&1
rc=$?
[ "$rc" = 1 ] && [ "$(tail -n 1 "$tmp/nout")" = "report: none (make regress wrote no record)" ] ||
    { fail "nightly when make regress wrote no record: exit $rc, want 1: $(tail -n 2 "$tmp/nout")"; }

# Settings are checked before the first step, and write no record.
before=$(ls "$tmp/nhistory" | wc -l)
for setting in VG_STEP_TIMEOUT=abc VG_SHARD=1of2 "VG_RUNNER=gpu box" VG_HISTORY=/proc/vgh; do
    # the setting last: env takes the later of two
    env FAKE_MODE=ok BUILD="$tmp/build" PYTHON="$py" VG_REPORT_DIR="$tmp/shtml" VG_HISTORY="$tmp/nhistory" \
        "$setting" bash "$here/ci/regress" >"$tmp/sout" 2>&1
    rc=$?
    [ "$rc" = 1 ] && grep -q "^report: none (bad setting: ${setting%%=*})$" "$tmp/sout" &&
        ! grep -q "golden-cpu:" "$tmp/sout" ||
        fail "regress with $setting: exit $rc, want 1 before any step: $(tail -n 3 "$tmp/sout")"
done
[ "$(ls "$tmp/nhistory" | wc -l)" = "$before" ] || fail "a bad setting left a record"
VG_MIN_EFFECT=3% PATH="$tmp/fakebin:$PATH" BUILD="$tmp/build" PYTHON="$py" VG_HISTORY="$tmp/nhistory" \
    bash "$here/ci/nightly" >"$tmp/nout" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "VG_MIN_EFFECT=3%" "$tmp/nout" && [ "$(ls "$tmp/nhistory" | wc -l)" = "$before" ] ||
    fail "nightly VG_MIN_EFFECT=3%: exit $rc, want 2 before make regress: $(tail -n 2 "$tmp/nout")"
bash "$here/ci/regress" --help | grep -q "^Exit status" || fail "ci/regress --help does not print its text"
bash "$here/ci/regress" extra >/dev/null 2>&1; [ $? = 2 ] || fail "ci/regress took an argument"
bash "$here/ci/nightly" --help | grep -q "^Env:" || fail "ci/nightly --help does not print its text"

# The repository's own results folder was not touched by any of this.
git -C "$here" status --porcelain -- reports/history | grep -q . && fail "reports/history changed"

if [ "$fails" -ne 0 ]; then
    echo "test_regress: $fails check(s) failed"
    exit 1
fi
echo "test_regress: ci/regress wiring, last line, records, golden failure, not-built parts and ci/nightly verdicts right"
exit 0
