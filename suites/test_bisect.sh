#!/bin/bash
# test_bisect.sh: git bisect run with ci/bisect-step names a planted commit.
#
# Builds a throwaway git repository in a temp dir with a short history of a
# tiny shell "kernel" (kernel.conf: its time per call and its result), a
# build script, a fake bench and a fake golden verify that write the shared
# JSON formats, driven through bisect-step's documented hooks
# (--build-cmd, --bench-cmd, --golden-cmd).  History:
#
#   c1 good   c2 comment   c3 does not build   c4 fixes the build
#   c5 SLOW (10 -> 13 us)   c6 comment   c7 WRONG result   c8 comment
#
# and checks that bisect names c5 for --perf --max-us, c5 for
# --baseline-record --max-regression, c7 for --golden (also with --case
# past a case that fails at every commit), and that the exit
# codes for an unbuildable commit, a crash, no matching row and a bad call
# are 125, 125, 125 and 128.  Exit 0 pass, anything else fail.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
step="$here/ci/bisect-step"
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vg-bisect-test.XXXXXX")
trap '[ -n "${VG_KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

repo="$tmp/repo"
. "$here/suites/common/kernel_repo.sh"
kernel_repo "$repo" || exit 1
cat > golden.sh <<'EOF'
#!/bin/sh
# golden.sh BUILD JSON: one golden row, PASS when the kernel's RESULT is 42.
. "$1/kernel.conf"
v=FAIL; [ "$RESULT" = 42 ] && v=PASS
printf '{"tool":"golden-verify","rows":[{"case":"fp8_small","file":"x.h5","family":"fp8","path":"dense","m":1,"n":256,"k":384,"groups":1,"tokens":1,"backend":"cpu","plan":"p0","rel_rms":1e-4,"max_abs":1e-3,"tol_rel_rms":1e-3,"tol_max_abs":0.05,"verdict":"%s"}]}\n' "$v" > "$2"
[ "$v" = PASS ]
EOF
cat > golden2.sh <<'EOF'
#!/bin/sh
# golden2.sh BUILD JSON: golden.sh's row plus a case that fails at every commit.
sh golden.sh "$1" "$2"
sed -i 's/}]}$/},{"case":"old_broken","file":"y.h5","family":"awq","path":"dense","m":1,"n":256,"k":384,"groups":1,"tokens":1,"backend":"cpu","plan":"p0","rel_rms":1.0,"max_abs":1.0,"tol_rel_rms":1e-3,"tol_max_abs":0.05,"verdict":"FAIL"}]}/' "$2"
exit 1
EOF

printf 'DELAY_US=10\nRESULT=42\n' > kernel.conf;                 c1=$(commit "c1: kernel")
echo "# tuned" >> kernel.conf;                                   c2=$(commit "c2: comment")
sed -i 's/^DELAY_US=10$/DELAY_US=1O/' kernel.conf;               c3=$(commit "c3: typo, does not build")
sed -i 's/^DELAY_US=1O$/DELAY_US=10/' kernel.conf;               c4=$(commit "c4: fix the build")
sed -i 's/^DELAY_US=10$/DELAY_US=13/' kernel.conf;               c5=$(commit "c5: planted slow commit")
echo "# more" >> kernel.conf;                                    c6=$(commit "c6: comment")
sed -i 's/^RESULT=42$/RESULT=41/' kernel.conf;                   c7=$(commit "c7: planted wrong commit")
echo "# last" >> kernel.conf;                                    c8=$(commit "c8: comment")

hooks=(--build "$tmp/build" --build-cmd 'sh build.sh {build}' --bench-cmd 'sh bench.sh {build} {json}'
       --golden-cmd 'sh golden.sh {build} {json}')

# bisect GOOD BAD ARGS...: runs a whole bisect, prints the first bad commit.
bisect() {
    local good=$1 bad=$2
    shift 2
    git bisect start "$bad" "$good" >/dev/null 2>&1
    git bisect run "$step" "$@" > "$tmp/bisect.log" 2>&1
    local first
    first=$(git rev-parse -q --verify refs/bisect/bad 2>/dev/null)
    grep -q "is the first bad commit" "$tmp/bisect.log" || first="none"
    git bisect reset >/dev/null 2>&1
    echo "$first"
}

# 1. --perf with a fixed limit.
got=$(bisect "$c1" "$c8" --perf 'path=grouped,family=fp8,tokens=6' --max-us 11.5 "${hooks[@]}")
[ "$got" = "$c5" ] || { fail "--perf --max-us named ${got:0:10}, want c5 ${c5:0:10}"; tail -30 "$tmp/bisect.log"; }

# 2. --baseline-record: a record of c1 made by reports/record.py.
git checkout -q "$c1"
sh build.sh "$tmp/build" && sh bench.sh "$tmp/build" "$tmp/c1-bench.json"
record=$("$py" "$here/reports/record.py" --bench-json "$tmp/c1-bench.json" --history "$tmp/history" --repo "$repo")
git checkout -q main 2>/dev/null || git checkout -q master
[ -f "$record" ] || fail "record.py wrote no record"
got=$(bisect "$c1" "$c8" --baseline-record "$record" --max-regression 5% "${hooks[@]}")
[ "$got" = "$c5" ] || { fail "--baseline-record named ${got:0:10}, want c5 ${c5:0:10}"; tail -30 "$tmp/bisect.log"; }

# 3. --golden.
got=$(bisect "$c1" "$c8" --golden "${hooks[@]}")
[ "$got" = "$c7" ] || { fail "--golden named ${got:0:10}, want c7 ${c7:0:10}"; tail -30 "$tmp/bisect.log"; }

# 3b. --golden --case: a case that fails at the good end too is left out.
got=$(bisect "$c1" "$c8" --golden --case 'fp8_*' "${hooks[@]}" --golden-cmd 'sh golden2.sh {build} {json}')
[ "$got" = "$c7" ] || { fail "--golden --case named ${got:0:10}, want c7 ${c7:0:10}"; tail -30 "$tmp/bisect.log"; }

# 4. Exit codes of single steps.
expect() {   # expect CODE COMMIT ARGS...
    local want=$1 at=$2
    shift 2
    git checkout -q "$at"
    "$step" "$@" > "$tmp/step.log" 2>&1
    local rc=$?
    [ "$rc" = "$want" ] || { fail "bisect-step $* at ${at:0:7}: exit $rc, want $want"; tail -5 "$tmp/step.log"; }
}
expect 125 "$c3" --golden "${hooks[@]}"                                          # does not build
expect 125 "$c4" --perf 'tokens=99' --max-us 5 "${hooks[@]}"                     # no matching row
expect 125 "$c4" --golden "${hooks[@]}" --golden-cmd 'kill -SEGV $$ # {json}'           # the tool crashes
expect 125 "$c4" --golden "${hooks[@]}" --golden-cmd 'exit 77 # {json}'                 # the tool skips
expect 1 "$c4" --golden --crash-is-bad "${hooks[@]}" --golden-cmd 'kill -SEGV $$ # {json}'  # to bisect a crash
expect 125 "$c4" --golden --crash-is-bad "${hooks[@]}" --golden-cmd 'exit 77 # {json}'
expect 125 "$c3" --golden --crash-is-bad "${hooks[@]}"                             # still does not build
expect 0 "$c4" --golden "${hooks[@]}"
expect 1 "$c7" --golden "${hooks[@]}"
expect 1 "$c4" --golden "${hooks[@]}" --golden-cmd 'sh golden2.sh {build} {json}'          # old_broken
expect 0 "$c4" --golden --case fp8_small "${hooks[@]}" --golden-cmd 'sh golden2.sh {build} {json}'
expect 125 "$c4" --golden --case nothing "${hooks[@]}"                           # no such case
expect 128 "$c4" --case fp8_small --perf 'tokens=6' --max-us 5 "${hooks[@]}"     # --case without --golden
expect 0 "$c4" --baseline-record "$record" --max-regression 5% "${hooks[@]}"
expect 1 "$c5" --baseline-record "$record" --max-regression 5% "${hooks[@]}"
expect 0 "$c5" --baseline-record "$record" --max-regression 40% "${hooks[@]}"
expect 128 "$c4" --perf 'colour=red' --max-us 5 "${hooks[@]}"                    # bad call
expect 128 "$c4" --baseline-record "$tmp/nope.json" "${hooks[@]}"                # no baseline
expect 128 "$c4" --max-us 5 "${hooks[@]}"                                        # no mode
# values that would make every step give one answer, and hooks it cannot read: abort
expect 128 "$c4" --perf 'tokens=6' --max-us nan "${hooks[@]}"
expect 128 "$c4" --baseline-record "$record" --max-regression 5 "${hooks[@]}"    # 500 %, not 5 %
expect 128 "$c4" --baseline-record "$record" --alpha 0 "${hooks[@]}"
expect 128 "$c4" --golden --timeout 0 "${hooks[@]}"
expect 128 "$c4" --golden "${hooks[@]}" --golden-cmd 'sh golden.sh {build} out.json'   # no {json}
expect 128 "$c4" --golden "${hooks[@]}" --build /proc/nope/build                # unusable --build
# output it cannot judge at this commit: skip, not a traceback read as "bad"
expect 125 "$c4" --baseline-record "$record" "${hooks[@]}" \
    --bench-cmd 'sh bench.sh {build} {json} && sed -i "s/\"samples_us\":\[/\"samples_us\":[null,/" {json}'
expect 125 "$c4" --golden "${hooks[@]}" --golden-cmd 'echo "{\"tool\":\"golden-verify\",\"rows\":[1]}" > {json}'
# a timed-out hook's processes go with it
expect 125 "$c4" --golden --timeout 1 "${hooks[@]}" \
    --golden-cmd "sleep 30 & echo \$! > $tmp/sleeper.pid; wait # {json}"
sleep 0.2
sleeper=$(cat "$tmp/sleeper.pid" 2>/dev/null)
# gone, or a zombie (killed; a container's init may not reap it)
case "$(ps -o stat= -p "${sleeper:-999999}" 2>/dev/null)" in
    "" | Z*) ;;
    *) fail "a timed-out hook left its child running"; kill "$sleeper" ;;
esac
cd "$here"

if [ "$fails" -ne 0 ]; then
    echo "test_bisect: $fails check(s) failed"
    exit 1
fi
echo "test_bisect: bisect named the planted slow (c5) and wrong (c7) commits; exit codes 0/1/125/128 right"
exit 0
