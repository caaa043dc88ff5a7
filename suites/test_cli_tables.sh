#!/bin/sh
# The tables the CLI prints read on their own: `voltgate plans` starts with a
# header row naming its columns, and the CPU bench's tables leave out the
# CUDA-only columns (stream ceiling, cuBLAS peers) instead of printing nan.
set -u
TOOL=${VG_TOOL:-build/bin/voltgate}
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$TOOL" plans --backend cpu >"$TMP/plans" 2>&1 || { echo "plans failed: $(cat "$TMP/plans")"; exit 1; }
head -n 1 "$TMP/plans" | grep -q '^backend  *id  *path  *tile (m n k)  *stages  *split_k  *max_rows  *families$' ||
    { echo "plans: first line '$(head -n 1 "$TMP/plans")' is not a header row"; exit 1; }
[ "$(sed -n 2p "$TMP/plans" | cut -c1-4)" = "cpu " ] || { echo "plans: no plan after the header"; exit 1; }
"$TOOL" bench --backend cpu --quick --tokens 1 --shape wo_a,dense >"$TMP/bench" 2>&1 &&
"$TOOL" bench --backend cpu --quick --tokens 1 --shape dense --plan all >>"$TMP/bench" 2>&1 ||
    { echo "bench failed: $(tail -3 "$TMP/bench")"; exit 1; }
grep -q 'grouped_us' "$TMP/bench" && grep -q 'TFLOP/s' "$TMP/bench" && grep -q 'plans forced' "$TMP/bench" ||
    { echo "bench: a table is missing"; cat "$TMP/bench"; exit 1; }
if grep -n -w -i 'nan\|ceil_frac\|bmm_bf16_us\|bf16_us' "$TMP/bench"; then
    echo "bench --backend cpu prints CUDA-only columns (above)"
    exit 1
fi
echo "cli tables: plans header, CPU bench without CUDA-only columns"
