#!/bin/bash
# test_ab_bench.sh: ci/ab-bench builds and benches variants and marks the one
# that differs.  Its build and bench are hooks here (--build-cmd,
# --bench-cmd): the bench is a fake that writes the bench JSON format with 15
# samples around the time in ab-delay.txt (10 us when absent), so the test
# needs no compiler and no GPU.  Variants: the working tree (reference), a
# patch that makes it 13 us, one that writes 10 again (the same time).
# Checks the ratios, the marks (and their rule, on compare() itself), the
# alternating order, the tree against itself, and the exit codes of a patch
# that does not apply (2), a work folder inside the tree (2), a build that
# fails (1) and a bench that writes nothing (1, never an earlier run's
# file).  Exit 0 pass, anything else fail.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
ab="$here/ci/ab-bench"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vg-ab-test.XXXXXX")
trap '[ -n "${VG_KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cat > "$tmp/bench.sh" <<'SH'
#!/bin/sh
# bench.sh JSON ORDERLOG: one kernel row, 15 samples around ab-delay.txt's us
# (output_ok false where ab-wrong.txt exists), named as a CPU bench named its
# grouped rows before issue 30 (wo_a/...) unless ab-name.txt gives the name.
d=10; [ -f ab-delay.txt ] && d=$(cat ab-delay.txt)
n=wo_a; [ -f ab-name.txt ] && n=$(cat ab-name.txt)
ok=true; [ -f ab-wrong.txt ] && ok=false
echo "$(basename "$PWD")" >> "$2"
awk -v d="$d" -v ok="$ok" -v n="$n" 'BEGIN { s = ""; for (j = 0; j < 15; j++) s = s (j ? "," : "") sprintf("%.4f", d * (1 + ((j * 7) % 15) / 1000.0));
  printf "{\"tool\":\"bench\",\"backend\":\"cpu\",\"rows\":[{\"name\":\"%s/grouped/fp8/t6/tune=off\",\"kind\":\"kernel\",\"output_ok\":%s,\"samples_us\":[%s]},{\"name\":\"copy/memcpy/64MiB\",\"kind\":\"copy\",\"samples_us\":[1,2,3]}]}\n", n, ok, s }' > "$1"
SH
patch_with() {   # patch_with FILE CONTENT: a patch that creates ab-delay.txt
    printf 'diff --git a/ab-delay.txt b/ab-delay.txt\nnew file mode 100644\n--- /dev/null\n+++ b/ab-delay.txt\n@@ -0,0 +1 @@\n+%s\n' "$2" > "$1"
}
patch_with "$tmp/slow.patch" 13
patch_with "$tmp/same.patch" 10
hooks=(--backend cpu --work "$tmp/work" --build-cmd true --bench-cmd "sh $tmp/bench.sh {json} $tmp/order.log")

out=$("$ab" "${hooks[@]}" ref=. slow="$tmp/slow.patch" same="$tmp/same.patch" 2>"$tmp/err")
rc=$?
[ "$rc" = 0 ] || { fail "ab-bench exit $rc"; cat "$tmp/err"; }
row=$(printf '%s\n' "$out" | grep '^| g4n256k512/grouped/fp8/t6/tune=off |')
case "$row" in
*"| 10.07 | 13.09 (1.300*) | 10.07 (1.000) |"*) ;;
*) fail "row: '$row'"; printf '%s\n' "$out" ;;
esac
printf '%s\n' "$out" | grep -q 'copy/memcpy' && fail "a copy row is in the table"
printf '%s\n' "$out" | grep -q 'geometric mean of the ratios: slow/ref 1.300, same/ref 1.000' \
    || fail "no geometric means: $out"
# Round 1 in order, round 2 reversed (each variant, the tree too, in its copy v-NAME).
order=$(tr '\n' ' ' < "$tmp/order.log")
want="v-ref v-slow v-same v-same v-slow v-ref "
[ "$order" = "$want" ] || fail "order '$order', want '$want'"
[ -s "$tmp/work/ab.json" ] || fail "no ab.json"

# A revision from before the CPU rows' rename (wo_a/...) against one after it
# (g4n256k512/...): one row with its ratio, not two rows without one.
printf 'diff --git a/ab-name.txt b/ab-name.txt\nnew file mode 100644\n--- /dev/null\n+++ b/ab-name.txt\n@@ -0,0 +1 @@\n+g4n256k512\n' > "$tmp/renamed.patch"
out=$("$ab" "${hooks[@]}" old=. new="$tmp/renamed.patch" 2>"$tmp/err") || fail "renamed: exit $?"
[ "$(printf '%s\n' "$out" | grep -c '/grouped/fp8/t6/tune=off |')" = 1 ] &&
    printf '%s\n' "$out" | grep -q '^| g4n256k512/grouped/fp8/t6/tune=off | 10.07 | 10.07 (1.000) |' ||
    fail "old and new row names not one row: $out"

# A variant whose output the bench finds wrong is marked, named on stderr and
# kept out of the geometric mean, however fast (a kernel that skips its work).
patch_with "$tmp/fast.patch" 5
{ cat "$tmp/fast.patch"; printf 'diff --git a/ab-wrong.txt b/ab-wrong.txt\nnew file mode 100644\n--- /dev/null\n+++ b/ab-wrong.txt\n@@ -0,0 +1 @@\n+x\n'; } > "$tmp/wrong.patch"
out=$("$ab" "${hooks[@]}" ref=. fast="$tmp/wrong.patch" 2>"$tmp/err") || fail "wrong output: exit $?"
printf '%s\n' "$out" | grep -q '| 10.07 | 5.035 (0.500\* !) |' || fail "wrong output not marked: $out"
printf '%s\n' "$out" | grep -q 'fast: no row with right outputs on both' || fail "wrong output in the mean: $out"
grep -q "fast: wrong output on 1 row(s)" "$tmp/err" || { fail "wrong output not named"; cat "$tmp/err"; }

# The tree against itself (the noise check), default names; a stale result is never reused.
out=$("$ab" "${hooks[@]}" . . 2>"$tmp/err") || fail "A/A: exit $?"
printf '%s\n' "$out" | grep -q '| 10.07 | 10.07 (1.000) |' || fail "A/A: $out"
"$ab" "${hooks[@]}" . . --bench-cmd 'true {json}' >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 1 ] && grep -q "wrote no usable JSON" "$tmp/err" || { fail "stale JSON reused: exit $rc"; cat "$tmp/err"; }
# A work folder inside the tree would copy itself or delete sources.
"$ab" "${hooks[@]}" . . --work "$here/abw" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] && grep -q "inside the tree" "$tmp/err" && [ ! -e "$here/abw" ] || { fail "work in tree: exit $rc"; cat "$tmp/err"; }

# The mark needs every round on one side and the U test agreeing: one fast round
# among slow ones (9.8 / 13 / 13 against 10) is not "faster".
python3 - "$ab" <<'PY' || fail "the mark's rule"
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("ab", sys.argv[1])
spec = importlib.util.spec_from_loader("ab", loader)
ab = importlib.util.module_from_spec(spec); loader.exec_module(ab)
def rows(c): return [{"name": "r", "kind": "kernel", "samples_us": [c * (1 + j / 1000) for j in range(15)]}]
rounds = [{"A": rows(10), "B": rows(v)} for v in (9.8, 13, 13)]
b = ab.compare([("A", "."), ("B", "x")], rounds, 0.01, 0.05)[0]["cells"]["B"]
assert not b["differs"], b
rounds = [{"A": rows(10), "B": rows(v)} for v in (12, 13, 13)]
b = ab.compare([("A", "."), ("B", "x")], rounds, 0.01, 0.05)[0]["cells"]["B"]
assert b["differs"] and abs(b["ratio"] - (1.2 * 1.3 * 1.3) ** (1 / 3)) < 1e-9, b
assert ab.name_variants(["HEAD^{/tune=off}", "x=HEAD", "."]) == [("A", "HEAD^{/tune=off}"), ("x", "HEAD"), ("B", ".")]
PY

printf 'not a patch\n' > "$tmp/bad.patch"
"$ab" "${hooks[@]}" . "$tmp/bad.patch" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] && grep -q "does not apply" "$tmp/err" || { fail "bad patch: exit $rc"; cat "$tmp/err"; }
"$ab" "${hooks[@]}" . "$tmp/slow.patch" --build-cmd 'test ! -f ab-delay.txt' >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 1 ] && grep -q "the build of B failed (exit 1)" "$tmp/err" || { fail "failed build: exit $rc"; cat "$tmp/err"; }
"$ab" "${hooks[@]}" . "$tmp/slow.patch" --bench-cmd 'true {json}' >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 1 ] && grep -q "wrote no usable JSON" "$tmp/err" || { fail "no JSON: exit $rc"; cat "$tmp/err"; }

# Flag values that would mark everything or nothing, and --bench-args that do
# not parse: refused before any build (exit 2).
for bad in "--alpha nan" "--alpha 2" "--min-effect -5" "--min-effect inf"; do
    # shellcheck disable=SC2086 # two words each
    "$ab" "${hooks[@]}" . . $bad >/dev/null 2>"$tmp/err"; rc=$?
    [ "$rc" = 2 ] && grep -q "alpha must be in (0, 1)" "$tmp/err" || { fail "$bad: exit $rc, want 2"; cat "$tmp/err"; }
done
rm -f "$tmp"/work/build-*.log
"$ab" "${hooks[@]}" . . --bench-args "--family 'awq" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] && grep -q "No closing quotation" "$tmp/err" && ! ls "$tmp"/work/build-*.log >/dev/null 2>&1 ||
    { fail "unbalanced --bench-args: exit $rc, want 2 before a build"; cat "$tmp/err"; }
# Work folders it cannot use: one line, exit 2; a user's file in it survives.
: > "$tmp/afile"
for w in "$tmp/afile" /proc/vgab /; do
    "$ab" "${hooks[@]}" . . --work "$w" >/dev/null 2>"$tmp/err"; rc=$?
    [ "$rc" = 2 ] && ! grep -q Traceback "$tmp/err" || { fail "--work $w: exit $rc, want 2"; cat "$tmp/err"; }
done
echo notes > "$tmp/work/build-notes.txt"
"$ab" "${hooks[@]}" . . >/dev/null 2>"$tmp/err" || fail "A/A with a user's file: exit $?"
[ -f "$tmp/work/build-notes.txt" ] || fail "ab-bench deleted a file of its work folder that is not its own"
# A bench killed by a signal is no result (exit 1), unlike exit 1 (a row's output check).
"$ab" "${hooks[@]}" . . --bench-cmd "sh $tmp/bench.sh {json} $tmp/order.log; kill -SEGV \$\$" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] && grep -q "killed by signal 11" "$tmp/err" || { fail "crashed bench: exit $rc, want 1"; cat "$tmp/err"; }
# A git revision from a worktree (.git is a file there).
if git -C "$here" rev-parse --git-dir >/dev/null 2>&1 && git -C "$here" worktree add -q --detach "$tmp/wt" HEAD 2>/dev/null; then
    cp "$ab" "$tmp/wt/ci/ab-bench"        # this tree's, not HEAD's
    "$tmp/wt/ci/ab-bench" "${hooks[@]}" base=HEAD new=. >/dev/null 2>"$tmp/err" ||
        { fail "a revision from a worktree: exit $?"; cat "$tmp/err"; }
    git -C "$here" worktree remove --force "$tmp/wt"
else
    echo "test_ab_bench: the worktree check skipped (no git checkout here)"
fi

if [ "$fails" -ne 0 ]; then
    echo "test_ab_bench: $fails check(s) failed"
    exit 1
fi
echo "test_ab_bench: the slower variant marked (1.300*), the same one not (1.000), a wrong output marked (!), order alternates, exits 2/1/1 right"
exit 0
