#!/bin/bash
# test_device_run.sh: what ci/device-run leaves for the device tool, which
# brings back at most 8 files of $OUT and the tail of the output: every file
# but summary.txt packed into results.tgz (subfolders too), nothing packed
# when there is nothing else, and the summary printed last.  Runs a copy of
# the script in an empty folder with a phase that does nothing, so it needs
# no GPU, compiler or .deps.  Exit 0 pass, anything else fail.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vg-devrun-test.XXXXXX")
trap '[ -n "${VG_KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
mkdir -p "$tmp/repo/ci" "$tmp/out"
cp "$here/ci/device-run" "$tmp/repo/ci/"

# A call that wrote logs, bench JSON and a folder before device-run packs.
echo log > "$tmp/out/build.log"
echo '{"rows": []}' > "$tmp/out/bench_wo_a.json"
mkdir -p "$tmp/out/sub" && echo x > "$tmp/out/sub/deep.txt"
OUT="$tmp/out" "$tmp/repo/ci/device-run" nothing > "$tmp/stdout" 2> "$tmp/stderr"
rc=$?
[ "$rc" = 0 ] || fail "exit $rc: $(cat "$tmp/stderr")"
left=$(cd "$tmp/out" && ls -A | tr '\n' ' ')
[ "$left" = "results.tgz summary.txt " ] || fail "left in OUT: '$left'"
packed=$(tar tzf "$tmp/out/results.tgz" 2>/dev/null | sort | tr '\n' ' ')
for f in build.log bench_wo_a.json sub/deep.txt; do
    case " $packed" in *" $f "*|*" ./$f "*) ;; *) fail "results.tgz lacks $f: $packed" ;; esac
done
last=$(tail -1 "$tmp/stdout")
[ "$last" = "==================== summary ====================" ] || fail "last line: '$last'"
[ -s "$tmp/stderr" ] && fail "stderr: $(cat "$tmp/stderr")"

# Nothing but the summary: no archive.
rm -rf "$tmp/out" && mkdir -p "$tmp/out"
OUT="$tmp/out" "$tmp/repo/ci/device-run" nothing > /dev/null 2>&1 || fail "empty OUT: exit $?"
left=$(cd "$tmp/out" && ls -A | tr '\n' ' ')
[ "$left" = "summary.txt " ] || fail "empty OUT left '$left'"

# The racecheck phase's probe line (ci/racecheck-probe.cu), with stand-ins
# for nvcc and compute-sanitizer on PATH: the sanitizer exits 9 for the
# probe at n0/n1 = 1/3 when told to, and 0 for everything else.
mkdir -p "$tmp/bin"
cat > "$tmp/bin/nvcc" <<'SH'
#!/bin/bash
while [ $# -gt 0 ]; do [ "$1" = -o ] && { touch "$2"; chmod +x "$2"; }; shift; done
SH
cat > "$tmp/bin/compute-sanitizer" <<'SH'
#!/bin/bash
case "$*" in
    *racecheck-probe\ 1\ 3) echo "========= RACECHECK SUMMARY: 1 hazard displayed"; exit "${FAKE_MORE_RC:-0}" ;;
    *racecheck-probe\ 3\ 3) echo "========= RACECHECK SUMMARY: 0 hazards displayed"; exit "${FAKE_SAME_RC:-0}" ;;
esac
echo "========= RACECHECK SUMMARY: 0 hazards displayed"
SH
chmod +x "$tmp/bin/nvcc" "$tmp/bin/compute-sanitizer"
probe_line() { # FAKE_MORE_RC FAKE_SAME_RC
    rm -rf "$tmp/out" && mkdir -p "$tmp/out"
    (cd "$tmp/repo" && PATH="$tmp/bin:$PATH" OUT="$tmp/out" SANITIZE_TOOLS=racecheck \
        FAKE_MORE_RC=$1 FAKE_SAME_RC=$2 ci/device-run sanitize > /dev/null 2>&1)
    grep '^racecheck probe' "$tmp/out/summary.txt"
}
case "$(probe_line 9 0)" in *"keep the padding"*) ;; *) fail "probe reporting: '$(probe_line 9 0)'" ;; esac
case "$(probe_line 0 0)" in *"no longer needs"*) ;; *) fail "probe clean: '$(probe_line 0 0)'" ;; esac
case "$(probe_line 9 9)" in *"broken"*) ;; *) fail "probe at n0 = n1: '$(probe_line 9 9)'" ;; esac

# The crossover phase: one bench per family of CROSSOVER_FAMILIES, a
# summary line each, and each family's crossover tables printed before the
# summary (a stand-in voltgate writes a log with one).
mkdir -p "$tmp/repo/build-gpu/bin"
cat > "$tmp/repo/build-gpu/bin/voltgate" <<'SH'
#!/bin/bash
fam=""; json=""
while [ $# -gt 0 ]; do
    case "$1" in --family) fam=$2; shift ;; --json) json=$2; shift ;; esac
    shift
done
echo '{"rows": []}' > "$json"
printf 'n4096k4096 dense (%s): rows\nn4096k4096 crossover (%s): us of the fastest plan\n  64  13.48\n' "$fam" "$fam"
SH
chmod +x "$tmp/repo/build-gpu/bin/voltgate"
rm -rf "$tmp/out" && mkdir -p "$tmp/out"
(cd "$tmp/repo" && OUT="$tmp/out" CROSSOVER_FAMILIES="fp8 nvfp4" ci/device-run crossover > "$tmp/stdout" 2>&1)
for f in fp8 nvfp4; do
    grep -q "^bench crossover $f: rc=0" "$tmp/out/summary.txt" || fail "crossover $f: $(cat "$tmp/out/summary.txt")"
    grep -q "^n4096k4096 crossover ($f)" "$tmp/stdout" || fail "crossover $f table not printed"
    # before the summary, which the device tool's output tail must keep
    table=$(grep -n "^n4096k4096 crossover ($f)" "$tmp/stdout" | cut -d: -f1 | head -1)
    head_line=$(grep -n "^==================== summary" "$tmp/stdout" | cut -d: -f1)
    [ -n "$table" ] && [ -n "$head_line" ] && [ "$table" -lt "$head_line" ] || fail "crossover $f table after the summary"
done
tar tzf "$tmp/out/results.tgz" 2>/dev/null | grep -q bench_crossover_fp8.json || fail "no bench_crossover_fp8.json packed"

# The volta phase: skipped, and saying why, without the hopper objects; with
# them, ci/sm70 run in its own build folder (never BUILD, whose native
# objects it would replace) and its golden line in the summary.
volta_line() {
    rm -rf "$tmp/out" && mkdir -p "$tmp/out"
    (cd "$tmp/repo" && OUT="$tmp/out" ci/device-run volta > /dev/null 2>&1)
    grep '^volta' "$tmp/out/summary.txt"
}
case "$(volta_line)" in *"skipped: no objects"*) ;; *) fail "volta without objects: '$(volta_line)'" ;; esac
rm -rf "$tmp/out" && mkdir -p "$tmp/out"
(cd "$tmp/repo" && OUT="$tmp/out" VOLTA_OBJS=" " ci/device-run volta > /dev/null 2>&1) || fail "VOLTA_OBJS empty: exit $?"
grep -q '^volta: skipped' "$tmp/out/summary.txt" || fail "VOLTA_OBJS empty: no skip line"
mkdir -p "$tmp/repo/build/sm70/hopper/obj/kernels/cuda"
touch "$tmp/repo/build/sm70/hopper/obj/kernels/cuda/gemm.cu.o" "$tmp/repo/build/sm70/hopper/obj/kernels/cuda/gemm_fp8.cu.o"
cat > "$tmp/repo/ci/sm70" <<'SH'
#!/bin/bash
[ "$1" = run ] && [ "$BUILD" = build-sm70run ] && [ $# = 3 ] || { echo "bad call: BUILD=$BUILD $*"; exit 3; }
echo "6 row(s): 6 passed, 0 failed"
SH
chmod +x "$tmp/repo/ci/sm70"
case "$(volta_line)" in *"2 objects): rc=0"*"6 row(s): 6 passed, 0 failed"*) ;; *) fail "volta: '$(volta_line)'" ;; esac

# The plans phase: skipped without PLANS; with it, each SANITIZE_TOOLS tool
# over `golden verify --plan PLANS golden/cases` on BUILD's voltgate, and on
# the Volta build's with VG_CUDA_PDL=0 where the volta phase left one; a
# failing run's line carries its rc and whose kernels the reports are in.
cp "$here/ci/sanitizer-owners" "$tmp/repo/ci/"
cat > "$tmp/bin/compute-sanitizer" <<'SH'
#!/bin/bash
while [ $# -gt 0 ] && [ "$1" != --error-exitcode ]; do shift; done
shift 2
"$@"
if [ -n "${FAKE_SAN_FAIL:-}" ]; then
    echo "========= Invalid __global__ read of size 4 bytes"
    echo "=========     at void vg_decode_kernel<DeqFP8, 1, 1, 6, 2, 4>(VgKernelParams)+0x10"
    echo "========= ERROR SUMMARY: 1 error"
    exit 9
fi
echo "========= ERROR SUMMARY: 0 errors"
SH
for b in build-gpu build-sm70run; do
    mkdir -p "$tmp/repo/$b/bin"
    cat > "$tmp/repo/$b/bin/voltgate" <<SH
#!/bin/bash
echo "$b PDL=\${VG_CUDA_PDL:-unset} \$*" >> "$tmp/calls"
echo "3 row(s): 3 passed, 0 failed"
SH
    chmod +x "$tmp/repo/$b/bin/voltgate"
done
plans_run() { # env assignments for the call
    rm -rf "$tmp/out" "$tmp/calls" && mkdir -p "$tmp/out"
    (cd "$tmp/repo" && env PATH="$tmp/bin:$PATH" OUT="$tmp/out" SANITIZE_TOOLS=memcheck "$@" \
        ci/device-run plans > /dev/null 2>&1)
}
plans_run
grep -q '^plans: skipped: set PLANS' "$tmp/out/summary.txt" || fail "plans without PLANS: $(cat "$tmp/out/summary.txt")"
mv "$tmp/repo/build-sm70run" "$tmp/repo/volta-away"
plans_run PLANS=cuda.dense.decode.a,cuda.dense.decode.b
grep -q '^plans: no Volta build' "$tmp/out/summary.txt" || fail "plans, no Volta build: $(cat "$tmp/out/summary.txt")"
grep -q '^plans memcheck build-gpu: rc=0 .*ERROR SUMMARY: 0 errors' "$tmp/out/summary.txt" ||
    fail "plans native line: $(cat "$tmp/out/summary.txt")"
grep -q '3 row(s): 3 passed' "$tmp/out/summary.txt" || fail "plans: no row count in the summary"
grep -qx 'build-gpu PDL=unset golden verify --backend cuda --plan cuda.dense.decode.a,cuda.dense.decode.b golden/cases' \
    "$tmp/calls" || fail "plans native call: $(cat "$tmp/calls")"
mv "$tmp/repo/volta-away" "$tmp/repo/build-sm70run"
plans_run PLANS=cuda.dense.decode.a
grep -q '^plans memcheck build-sm70run (VG_CUDA_PDL=0): rc=0' "$tmp/out/summary.txt" ||
    fail "plans Volta line: $(cat "$tmp/out/summary.txt")"
grep -q '^build-sm70run PDL=0 golden verify --backend cuda --plan cuda.dense.decode.a golden/cases' "$tmp/calls" ||
    fail "plans Volta call: $(cat "$tmp/calls")"
plans_run PLANS=cuda.dense.decode.a FAKE_SAN_FAIL=1
grep -q '^plans memcheck build-gpu: rc=9 .*1 error.*fp8 decode.m48' "$tmp/out/summary.txt" ||
    fail "plans failing line: $(cat "$tmp/out/summary.txt")"

[ "$fails" = 0 ] && echo "test_device_run: ok" || echo "test_device_run: $fails failure(s)"
[ "$fails" = 0 ]
