#!/bin/bash
# test_sanitizer_owners.sh: ci/sanitizer-owners tells a compute-sanitizer
# log's reports in our kernels (vg_*) from those in other libraries' (the
# cuBLAS kernel racecheck flagged in test_dense_every_plan on an H100), in
# racecheck's and memcheck's formats, names the plan each of ours runs
# (family and plan id shape from the template arguments, racecheck's
# hazards summed), and refuses a file it cannot read.
# The logs are written here in the tool's format (two report lines copied
# from a real H100 run).  Exit 0 pass, anything else fail.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tool="$here/ci/sanitizer-owners"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vg-sanowners.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() { # log, expected line after "LOG: "
    local got
    got=$("$tool" "$tmp/$1" 2>&1)
    [ "$got" = "$tmp/$1: $2" ] || fail "$1: got '$got', want '$2'"
}

cat > "$tmp/race.log" <<'LOG'
========= COMPUTE-SANITIZER
[ RUN      ] test_dense_every_plan
========= Error: Race reported between Read access at nvjet_sm90_hss_64x8_64x16_1x1_h_bz_splitK_TNT+0xaf0
=========     and Write access at nvjet_sm90_hss_64x8_64x16_1x1_h_bz_splitK_TNT+0x2ec0 [12 hazards]
=========
========= Error: Race reported between Write access at void vg_decode_kernel<DeqAWQ, (int)1, (int)2, (int)8, (int)2, (int)4>(KParams)+0xc9d0 in decode_kernel.cuh:650
=========     and Read access at void vg_decode_kernel<DeqAWQ, (int)1, (int)2, (int)8, (int)2, (int)4>(KParams)+0xcc70 in decode_kernel.cuh:662 [256 hazards]
=========
========= Error: Race reported between Write access at void vg_decode_kernel<DeqNVFP4, (int)1, (int)2, (int)8, (int)2, (int)4>(KParams)+0xe5b0 in decode_kernel.cuh:650
=========     and Read access at void vg_decode_kernel<DeqNVFP4, (int)1, (int)2, (int)8, (int)2, (int)4>(KParams)+0xe860 in decode_kernel.cuh:662 [640 hazards]
========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)
LOG
expect race.log "2 report(s) in voltgate kernels (vg_*), 1 elsewhere [first: nvjet_sm90_hss_64x8_64x16_1x1_h_bz_splitK_TNT]; ours: awq decode.m64n64wn4wk2.u2 1 (256 hazards), nvfp4 decode.m64n64wn4wk2.u2 1 (640 hazards)"

# the same plan twice, hazards summed; a decode plan of one warp column
# (WN = 1: "w<WK>") whose dequantizer is a family's Words variant, a
# report with no hazard count
cat > "$tmp/race2.log" <<'LOG'
========= Error: Race reported between Write access at void vg_decode_kernel<DeqAWQ, (int)1, (int)2, (int)8, (int)2, (int)4>(KParams)+0xc9d0 in decode_kernel.cuh:650
=========     and Read access at void vg_decode_kernel<DeqAWQ, (int)1, (int)2, (int)8, (int)2, (int)4>(KParams)+0xcc70 in decode_kernel.cuh:662 [3 hazards]
=========
========= Error: Race reported between Write access at void vg_decode_kernel<DeqMXFP4Words, (int)2, (int)4, (int)2, (int)2, (int)1>(KParams)+0x100 in decode_kernel.cuh:600
=========     and Read access at void vg_decode_kernel<DeqMXFP4Words, (int)2, (int)4, (int)2, (int)2, (int)1>(KParams)+0x200 in decode_kernel.cuh:610
=========
========= Error: Race reported between Write access at void vg_decode_kernel<DeqAWQ, (int)1, (int)2, (int)8, (int)2, (int)4>(KParams)+0xc9d0 in decode_kernel.cuh:650
=========     and Read access at void vg_decode_kernel<DeqAWQ, (int)1, (int)2, (int)8, (int)2, (int)4>(KParams)+0xcc70 in decode_kernel.cuh:662 [10 hazards]
========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)
LOG
expect race2.log "3 report(s) in voltgate kernels (vg_*), 0 elsewhere; ours: awq decode.m64n64wn4wk2.u2 2 (13 hazards), mxfp4 decode.m16n32w4.u2 1"

# memcheck: the kernel is on the line after the report's first
cat > "$tmp/mem.log" <<'LOG'
========= Invalid __global__ write of size 4 bytes
=========     at void vg_gemm_kernel<DeqFP8, (int)64, (int)64, (int)128, (int)2, (int)2, (int)1, (int)4>(KParams)+0x70 in gemm_kernel.cuh:300
=========     by thread (0,0,0) in block (0,0,0)
========= Invalid __shared__ read of size 16 bytes
=========     at cutlass_kernel_x+0x10
=========     by thread (1,0,0) in block (0,0,0)
========= ERROR SUMMARY: 2 errors
LOG
expect mem.log "1 report(s) in voltgate kernels (vg_*), 1 elsewhere [first: cutlass_kernel_x]; ours: fp8 tiled m64n64k128.s4 1"

printf '========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n' > "$tmp/clean.log"
expect clean.log "0 report(s) in voltgate kernels (vg_*), 0 elsewhere"

"$tool" "$tmp/absent.log" > /dev/null 2> "$tmp/err"
rc=$?
[ "$rc" = 2 ] || fail "unreadable log: exit $rc, want 2"
grep -q "cannot read $tmp/absent.log" "$tmp/err" || fail "unreadable log: '$(cat "$tmp/err")'"

[ "$fails" = 0 ] && echo "test_sanitizer_owners: ok" || { echo "test_sanitizer_owners: $fails failure(s)"; exit 1; }
