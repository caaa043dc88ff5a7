#!/bin/bash
# ci/sm70's SASS check, on hand-written `cuobjdump -sass` listings: it must
# pass only when every GEMM kernel (vg_decode_kernel, vg_gemm_kernel) issues
# the Volta MMA (HMMA.884), fail naming the kernel that does not, and fail
# when the listing holds no GEMM kernel at all.  (The sm_70 build itself is
# `make sm70-check`: minutes, not part of check.)
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vg-sm70-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

kernel() { # NAME MMA-COUNT
    printf '\t\tFunction : %s\n\t.headerflags\t@"EF_CUDA_SM70 EF_CUDA_PTX_SM(EF_CUDA_SM70)"\n' "$1"
    printf '        /*0000*/                   MOV R1, c[0x0][0x28] ;\n'
    for ((i = 0; i < $2; i++)); do
        printf '        /*%04x*/                   HMMA.884.F32.F32.STEP%d R8, R4.ROW, R6.COL, R8 ;\n' $((16 * i + 16)) $((i % 4))
    done
    printf '        /*0ff0*/                   EXIT ;\n'
}
decode=_Z16vg_decode_kernelI6DeqFP8Li1ELi4ELi1ELi2EEv7KParams
prefill=_Z14vg_gemm_kernelI6DeqFP8Li128ELi128ELi64ELi3ELi2ELi2ELi1EEv7KParams
reduce=_Z23vg_splitk_reduce_kernelPKfPvimi

{ kernel $decode 8; kernel $reduce 0; kernel $prefill 4; } >"$tmp/good.sass"
out=$("$here/ci/sm70" check-sass "$tmp/good.sass" 2>&1); rc=$?
[ $rc = 0 ] || fail "every GEMM kernel has HMMA.884: exit $rc ($out)"
echo "$out" | grep -q 'all 2 GEMM kernels' || fail "the count of GEMM kernels: $out"
grep -q "^8 $decode\$" "$tmp/good.hmma884" || fail "per-kernel count: $(cat "$tmp/good.hmma884")"

{ kernel $decode 8; kernel $prefill 0; } >"$tmp/bad.sass"
out=$("$here/ci/sm70" check-sass "$tmp/bad.sass" 2>&1); rc=$?
[ $rc = 1 ] || fail "a GEMM kernel without HMMA.884 passed: exit $rc"
echo "$out" | grep -q "no HMMA.884: $prefill" || fail "the kernel without HMMA.884 is not named: $out"

# ci/sm70 build checks the listings of all GEMM objects (gemm.cu.o and the
# per-family gemm_*.cu.o) concatenated: each object's listing has its own
# header; the kernels of every object count, and one without HMMA.884 in
# the second object still fails.
{ printf '\nFatbin elf code:\n================\narch = sm_70\n'; kernel $reduce 0; } >"$tmp/obj1.sass"
{ printf '\nFatbin elf code:\n================\narch = sm_70\n'; kernel $decode 8; kernel $prefill 4; } >"$tmp/obj2.sass"
cat "$tmp/obj1.sass" "$tmp/obj2.sass" >"$tmp/objs.sass"
out=$("$here/ci/sm70" check-sass "$tmp/objs.sass" 2>&1); rc=$?
[ $rc = 0 ] || fail "concatenated listings of several objects: exit $rc ($out)"
echo "$out" | grep -q 'all 2 GEMM kernels' || fail "the count over several objects: $out"
{ printf '\nFatbin elf code:\n================\narch = sm_70\n'; kernel $decode 8; kernel $prefill 0; } >"$tmp/obj3.sass"
cat "$tmp/obj1.sass" "$tmp/obj3.sass" >"$tmp/objs-bad.sass"
out=$("$here/ci/sm70" check-sass "$tmp/objs-bad.sass" 2>&1); rc=$?
[ $rc = 1 ] || fail "a GEMM kernel without HMMA.884 in the second object passed: exit $rc"

kernel $reduce 0 >"$tmp/none.sass"
"$here/ci/sm70" check-sass "$tmp/none.sass" >/dev/null 2>&1 && fail "a listing without GEMM kernels passed"

"$here/ci/sm70" check-sass "$tmp/missing.sass" >/dev/null 2>&1; rc=$?
[ $rc = 1 ] || fail "a missing listing: exit $rc, not 1"
"$here/ci/sm70" frobnicate >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "an unknown mode: exit $rc, not 2"

[ $fails = 0 ] && echo "ok: ci/sm70 check-sass passes, fails and names as it should"
[ $fails = 0 ]
