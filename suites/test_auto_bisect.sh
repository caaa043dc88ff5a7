#!/bin/bash
# ci/nightly --bisect's bisect (ci/auto-bisect) names a planted slow commit.
#
# A throwaway repository (as reports/BISECT.md does by hand, and
# test_bisect.sh): a tiny shell "kernel" whose time per call is in
# kernel.conf, a build script and a fake bench writing the bench JSON:
#
#   c1 good   c2 comment   c3 does not build   c4 fixes the build
#   c5 SLOW (10 -> 13 us)   c6 comment   c7 comment
#
# Records of c2 and c7 (reports/record.py) make report.py flag the row and
# print its bisect; auto-bisect runs it (with this repository's build and
# bench through bisect-step's hooks, a build failure a skip) and must name
# c5, within the step bound; with a bound of one step it names none; the
# page then shows the commit (report.py --first-bad, as the nightly runs it).
#
# Then across a rename of the rows (issue 30: the CPU bench named its grouped
# rows wo_a/... before, g4n256k512/... since): a second repository whose
# bench prints the old names up to r3 and the new ones from r4,
#
#   r1 good   r2 comment (old names)   r3 SLOW (old names)   r4 rename   r5 comment
#
# the baseline record (r2) holds old names, the latest (r5) new ones: the
# report must compare them (not "nothing compared") and the bisect must
# name r3, whose bench prints the old name.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vg-auto-bisect-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
repo="$tmp/repo"
. "$here/suites/common/kernel_repo.sh"
kernel_repo "$repo" || exit 1
printf 'DELAY_US=10\n' > kernel.conf;                 c1=$(commit "c1: kernel")
echo "# tuned" >> kernel.conf;                        c2=$(commit "c2: comment")
sed -i 's/^DELAY_US=10$/DELAY_US=1O/' kernel.conf;    c3=$(commit "c3: typo, does not build")
sed -i 's/^DELAY_US=1O$/DELAY_US=10/' kernel.conf;    c4=$(commit "c4: fix the build")
sed -i 's/^DELAY_US=10$/DELAY_US=13/' kernel.conf;    c5=$(commit "c5: planted slow commit")
echo "# more" >> kernel.conf;                         c6=$(commit "c6: comment")
echo "# last" >> kernel.conf;                         c7=$(commit "c7: comment")
record_at() {   # record_at REPO HISTORY COMMIT...: build, bench and record each commit of REPO (cwd)
    local rrepo=$1 hist=$2 at
    shift 2
    for at in "$@"; do
        git checkout -q "$at"
        sh build.sh "$tmp/build" && sh bench.sh "$tmp/build" "$tmp/bench.json" &&
            "$py" "$here/reports/record.py" --bench-json "$tmp/bench.json" --history "$hist" --repo "$rrepo" \
                >/dev/null || { echo "record of ${at:0:7} failed"; return 1; }
    done
    git checkout -q main
}
record_at "$repo" "$tmp/history" "$c2" "$c7" || exit 1
"$py" "$here/reports/report.py" --history "$tmp/history" --out "$tmp/html" --targets none >"$tmp/report.txt" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "git bisect run /tmp/bisect-step --baseline-record" "$tmp/report.txt" ||
    { echo "report.py: exit $rc, want 1 with a bisect: $(tail -5 "$tmp/report.txt")"; exit 1; }
hooks="--build $tmp/build-bisect --build-cmd 'sh build.sh {build}' --bench-cmd 'sh bench.sh {build} {json}'"
"$py" "$here/ci/auto-bisect" "$tmp/report.txt" --step-args "$hooks" --summary "$tmp/first-bad.txt" >"$tmp/bisect.log" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "^auto-bisect: first bad commit: $c5 c5: planted slow commit$" "$tmp/bisect.log" ||
    { echo "auto-bisect: exit $rc, want c5 ${c5:0:7} named:"; cat "$tmp/bisect.log"; exit 1; }
[ "$(git rev-parse HEAD)" = "$(git rev-parse main)" ] && ! git bisect log >/dev/null 2>&1 ||
    { echo "auto-bisect left the checkout bisecting"; exit 1; }
"$py" "$here/ci/auto-bisect" "$tmp/report.txt" --step-args "$hooks" --max-steps 1 >"$tmp/short.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "no first bad commit within 1 steps" "$tmp/short.log" ||
    { echo "auto-bisect --max-steps 1: exit $rc, want 1: $(cat "$tmp/short.log")"; exit 1; }
first=$(sed 's/^auto-bisect: first bad commit: //' "$tmp/first-bad.txt")
"$py" "$here/reports/report.py" --history "$tmp/history" --out "$tmp/html" --targets none --first-bad "$first" \
    >/dev/null 2>&1
grep -q "First bad commit (ci/nightly --bisect ran it): $c5 c5: planted slow commit" "$tmp/html/index.html" ||
    { echo "the page does not name the first bad commit"; exit 1; }
grep -q -- '--bisect' "$here/ci/nightly" && grep -q 'ci/auto-bisect' "$here/ci/nightly" ||
    { echo "ci/nightly does not run ci/auto-bisect on --bisect"; exit 1; }
steps=$(grep -c '^auto-bisect: step' "$tmp/bisect.log")

kernel_repo "$tmp/repo2" || exit 1
printf 'DELAY_US=10\nROW_PREFIX=wo_a\n' > kernel.conf;         r1=$(commit "r1: kernel")
echo "# tuned" >> kernel.conf;                                   r2=$(commit "r2: comment")
sed -i 's/^DELAY_US=10$/DELAY_US=13/' kernel.conf;               r3=$(commit "r3: planted slow commit")
sed -i '/^ROW_PREFIX=/d' kernel.conf;                            r4=$(commit "r4: rows named after their shape")
echo "# last" >> kernel.conf;                                    r5=$(commit "r5: comment")
record_at "$tmp/repo2" "$tmp/history2" "$r2" "$r5" || exit 1
grep -q '"wo_a/grouped/fp8/t6/tune=on"' "$tmp"/history2/*"${r2:0:10}"*.json ||
    { echo "the record of r2 does not hold the old name"; exit 1; }
"$py" "$here/reports/report.py" --history "$tmp/history2" --out "$tmp/html2" --targets none >"$tmp/report2.txt" 2>&1
rc=$?
[ $rc = 1 ] && grep -q -- "--perf name=g4n256k512/grouped/fp8/t6/tune=on " "$tmp/report2.txt" ||
    { echo "report.py across the rename: exit $rc, want 1 with a bisect of the new name: $(tail -5 "$tmp/report2.txt")"
      exit 1; }
hooks2="--build $tmp/build2-bisect --build-cmd 'sh build.sh {build}' --bench-cmd 'sh bench.sh {build} {json}'"
"$py" "$here/ci/auto-bisect" "$tmp/report2.txt" --step-args "$hooks2" >"$tmp/bisect2.log" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "^auto-bisect: first bad commit: $r3 r3: planted slow commit$" "$tmp/bisect2.log" ||
    { echo "auto-bisect across the rename: exit $rc, want r3 ${r3:0:7} named:"; cat "$tmp/report2.txt" "$tmp/bisect2.log"
      exit 1; }
# Bad input and aborted steps, in the first repository: exit 2 before any
# step, or 1 with no commit named; never a wrong commit with exit 0.
cd "$repo" || exit 1
ab() { "$py" "$here/ci/auto-bisect" "$@" >"$tmp/ab.log" 2>&1; }
want_ab() {   # want_ab RC PATTERN ARGS...
    local rc=$1 pat=$2
    shift 2
    ab "$@"
    local got=$?
    [ "$got" = "$rc" ] && grep -q -e "$pat" "$tmp/ab.log" ||
        { echo "auto-bisect $*: exit $got, want $rc and '$pat':"; cat "$tmp/ab.log"; exit 1; }
    ! grep -q "first bad commit:" "$tmp/ab.log" || [ "$rc" = 0 ] ||
        { echo "auto-bisect $*: named a commit though it failed"; exit 1; }
    [ "$(git rev-parse HEAD)" = "$(git rev-parse main)" ] || { echo "auto-bisect $*: left HEAD moved"; exit 1; }
}
want_ab 1 "abort (bisect-step killed by signal 9)" "$tmp/report.txt" --step-args "$hooks --build-cmd 'kill -9 \$PPID'"
sed "s/^\( *git bisect start \)[^ ]*/\1deadbeef/" "$tmp/report.txt" >"$tmp/report-gone.txt"
want_ab 2 "the bad commit deadbeef is not in this checkout" "$tmp/report-gone.txt" --step-args "$hooks"
sed "s/^\( *git bisect start \)[^ ]* [^ ]*/\1$c5 $c4/" "$tmp/report.txt" >"$tmp/report-one.txt"
want_ab 0 "^auto-bisect: first bad commit: $c5 c5: planted slow commit$" "$tmp/report-one.txt" --step-args "$hooks"
! grep -q "step 1" "$tmp/ab.log" || { echo "auto-bisect ran a step where git had named the commit"; exit 1; }
want_ab 2 "max-steps must be 1 or more" "$tmp/report.txt" --step-args "$hooks" --max-steps 0
want_ab 2 "summary /proc/nope/x" "$tmp/report.txt" --step-args "$hooks" --summary /proc/nope/x
want_ab 2 "No closing quotation" "$tmp/report.txt" --step-args "--build-cmd 'sh build.sh"
printf 'git bisect start \377\n' >"$tmp/report-bin.txt"
want_ab 2 "report-bin.txt" "$tmp/report-bin.txt"
git bisect start "$c7" "$c1" >/dev/null 2>&1
ab "$tmp/report.txt" --step-args "$hooks"
rc=$?
[ $rc = 2 ] && grep -q "already bisecting" "$tmp/ab.log" && git bisect log >/dev/null 2>&1 ||
    { echo "auto-bisect in a checkout already bisecting: exit $rc, want 2 and that bisect kept:"
      cat "$tmp/ab.log"; exit 1; }
git bisect reset >/dev/null 2>&1
"$py" "$here/ci/auto-bisect" --help | grep -q "Exit 0 found, 1 not" ||
    { echo "auto-bisect --help does not say its exit codes"; exit 1; }

echo "auto-bisect named c5 ($steps steps, c3 skipped when met), and r3 across the rename of the rows; bad input refused"
