#!/bin/sh
# The fence between libvoltgate (what a serving engine links) and the harness
# (build/lib/libvoltgate_harness.a: golden/, HDF5, the benchmark's cuBLAS
# peers and CUDA helpers), issue 28:
#   - no harness object is a member of libvoltgate.a, and no symbol is
#     defined in both;
#   - libvoltgate.a needs no HDF5 symbol (H5*) and nothing the harness
#     defines (an arrow back from kernels/ or runtime/ into golden/);
#   - libvoltgate.so, when built (make, make check), lists no libhdf5 among
#     what it needs and imports no H5 symbol (it links -Wl,--no-undefined);
#   - neither library links cuBLAS (issue 31): libvoltgate.so needs no
#     libcublas and imports no cublas* symbol, libvoltgate.a refers to none:
#     cuBLAS is loaded at run time, so libvoltgate loads where it is missing
#     (the bench's cuBLAS peers, in the harness, may link it).
set -u
BUILD=${VG_BUILD:-build}
LIB="$BUILD/lib/libvoltgate.a"
HARNESS="$BUILD/lib/libvoltgate_harness.a"
SO="$BUILD/lib/libvoltgate.so"
[ -f "$LIB" ] || { echo "no $LIB"; exit 1; }
[ -f "$HARNESS" ] || { echo "no $HARNESS"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

ar t "$LIB" | sort >"$TMP/lib.members"
ar t "$HARNESS" | sort >"$TMP/harness.members"
grep -q '^golden_' "$TMP/harness.members" || bad "$HARNESS holds no golden_*.o"
both=$(comm -12 "$TMP/lib.members" "$TMP/harness.members")
[ -z "$both" ] || bad "members of both libraries: $both"
for m in bench_peer.cu.o cuda_bench_absent.o sha256.o safetensors.o; do
    grep -qx "$m" "$TMP/lib.members" && bad "$LIB holds $m (harness)"
done
grep -q '^golden_' "$TMP/lib.members" && bad "$LIB holds golden objects: $(grep '^golden_' "$TMP/lib.members" | tr '\n' ' ')"

# Symbols: strong definitions (T/D/B/R...; weak and unique ones, such as the
# C++ objects' DW.ref.__gxx_personality_v0, may be in both) and undefined ones.
nm -g --defined-only "$LIB" 2>/dev/null | awk 'NF == 3 && $2 !~ /^[VvWwu]$/ {print $3}' | sort -u >"$TMP/lib.def"
nm -g --defined-only "$HARNESS" 2>/dev/null | awk 'NF == 3 && $2 !~ /^[VvWwu]$/ {print $3}' | sort -u >"$TMP/harness.def"
nm -g --undefined-only "$LIB" 2>/dev/null | awk '{print $NF}' | sort -u >"$TMP/lib.undef"
[ -s "$TMP/lib.def" ] || bad "nm read no symbol from $LIB"
dup=$(comm -12 "$TMP/lib.def" "$TMP/harness.def" | head -5)
[ -z "$dup" ] || bad "defined in both libraries: $dup"
h5=$(grep '^H5' "$TMP/lib.undef" | head -5)
[ -z "$h5" ] || bad "$LIB needs HDF5: $h5"
blas=$(grep '^cublas' "$TMP/lib.undef" | head -5 | tr '\n' ' ')
[ -z "$blas" ] || bad "$LIB calls cuBLAS directly (it must dlopen it): $blas"
# What libvoltgate needs and does not define itself must not come from the harness.
comm -23 "$TMP/lib.undef" "$TMP/lib.def" >"$TMP/lib.external"
back=$(comm -12 "$TMP/lib.external" "$TMP/harness.def" | head -5)
[ -z "$back" ] || bad "$LIB calls into the harness: $back"

if [ -f "$SO" ]; then
    needed=$(readelf -d "$SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    case "$needed" in *hdf5*) bad "$SO needs HDF5 ($needed)";; esac
    case "$needed" in *cublas*) bad "$SO links cuBLAS ($needed): it must load it at run time";; esac
    blas=$(nm -D --undefined-only "$SO" | awk '{print $NF}' | grep '^cublas' | head -5 | tr '\n' ' ')
    [ -z "$blas" ] || bad "$SO imports cuBLAS symbols: $blas"
    h5=$(nm -D "$SO" | awk '{print $NF}' | grep '^H5' | head -5)
    [ -z "$h5" ] || bad "$SO refers to HDF5: $h5"
    golden=$(nm -D --defined-only "$SO" | awk '{print $NF}' | grep -E '^vg_(golden|cublas)_' | head -5)
    [ -z "$golden" ] || bad "$SO exports harness functions: $golden"
    so="$SO needs: $needed"
else
    so="$SO not built (make all or make check builds it)"
fi
[ "$fail" = 0 ] || exit 1
echo "fences: $(wc -l <"$TMP/lib.members") objects in libvoltgate.a, $(wc -l <"$TMP/harness.members") in the harness, none shared, no H5 or cuBLAS symbol, no call into the harness; $so"
