#!/usr/bin/python3
"""The voltgate results report and the noise-aware regression rule.

    report.py --history DIR --out DIR [--baseline COMMIT | --baseline-record FILE]
              [--min-effect 0.03] [--alpha 0.05] [--targets FILE]

Reads every record in --history (reports/SCHEMA.md; a bad file is skipped
with a message), merges the records of one run (the shards of one commit
from many runners) and writes --out/index.html with PNG plots next to it.

Regression rule: the latest run is compared with a baseline run -- by
default the run before it, else the latest run of --baseline COMMIT (a
prefix is enough) or the run holding --baseline-record FILE.  A benchmark
row (kernel and dispatch rows; copy and peer rows are the machine, shown
but never flagged) regresses when BOTH

  * a two-sided Mann-Whitney U test of its samples against the baseline's
    gives p < --alpha (exact distribution when there are no ties and at most
    40 samples in all, else the normal approximation with tie and continuity
    corrections; the page says which), and
  * its median is slower by at least --min-effect (default 3 %).

With fewer than 9 samples on either side the test means little: such a row
is reported "too few samples" and never flagged.  A golden row (case,
backend, plan) regresses when it went PASS -> FAIL or is a new case that
fails; a row that still fails is listed and fails the run too.

The page also checks the issues' speed targets (--targets, default
reports/targets.json; targets.py) against the latest run's rows; they are
goals, shown and summarised on stdout, and do not change the exit status.

A backend whose rows the baseline holds and the latest run lacks entirely
(the CUDA side that did not run tonight) is printed as VANISHED and fails
the run: it is not a pass.

stdout gets the flagged rows as a short markdown table.  Exit status: 0 no
regression, 1 something regressed, a golden case fails or a backend
vanished, 2 bad usage or no usable record.
"""
import argparse
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record as vgrecord  # noqa: E402
import stats  # noqa: E402,F401  (report.stats: the tests reach the rule's statistics so)
import targets as vgtargets  # noqa: E402

# The report's parts; every name stays reachable as report.NAME, as the
# tests and other scripts use it.
from report_runs import (  # noqa: E402,F401
    Run, group_runs, pick_baseline, _natural, _slug,
)
from report_rule import (  # noqa: E402,F401
    FLAGGED_KINDS, compare_runs, rows_compared, nothing_compared_text, vanished_backends, golden_by_case,
    reproduce_command, _worst, flagged, _glob_literal, _bench_cmd_for, CPU_BUILD_CMD,
    _relative_iqr, row_spread, bisect_recipe, markdown_table,
)
from report_plots import (  # noqa: E402,F401
    matplotlib_missing, _plt, _save, _short_name, run_labels, plot_history, _plot_bandwidth_trend,
    plot_bandwidth, _ratio, plot_golden, plot_replay, plot_coverage, crossover_series, plot_crossover,
    CROSSOVER_TUNED, CROSSOVER_PEER,
)
from report_page import (  # noqa: E402,F401
    _e, loop_vs_grouped, tuner_vs_heuristic, CSS, Html, _link, _anchor, _table, _fmt, _href,
    golden_case_table, v100_ceiling_lookup, v100_model_section, v100_crossover_section, render_page,
    crossover_table,
)


def write_report(runs, latest, baseline, args, problems, target_list=(), targets_error=None):
    """Writes the page; returns (index, bench_res, golden_res, perf, gold,
    written, target lines, bisect recipe)."""
    os.makedirs(args.out, exist_ok=True)
    for name in os.listdir(args.out):            # plots of an earlier report
        if name.endswith(".png") and re.match(r"^(history|bandwidth|golden|replay|coverage|crossover)", name):
            os.unlink(os.path.join(args.out, name))
    bench_res, golden_res = compare_runs(latest, baseline, args.min_effect, args.alpha)
    perf, gold = flagged(bench_res, golden_res)
    target_lines = vgtargets.evaluate(target_list, {**latest.bench, **vgtargets.model_rows(latest.v100_model())})
    recipe = bisect_recipe(latest, baseline, perf, gold, args.min_effect, args.alpha, runs)
    written = []
    plot_note = None
    no_matplotlib = matplotlib_missing()
    if no_matplotlib:
        # The verdict and the tables do not need plots: a machine set up with
        # VG_DEPS=build (no matplotlib) still gets them, and the page says why
        # the plots are absent.
        plots = dict.fromkeys(("history", "bandwidth", "golden", "replay", "coverage", "crossover"), [])
        plot_note = (f"Plots not drawn: {no_matplotlib}; "
                     "apt-get install python3-matplotlib (or make deps) draws them.")
        print(f"report.py: {plot_note}", file=sys.stderr)
    else:
        row_plots = {}
        regressed_keys = {r["key"] for r in perf}
        # One run draws single dots: trends start with the second run.
        plots = {"history": plot_history(runs, args.out, written, regressed=regressed_keys,
                                         row_plots=row_plots) if len(runs) > 1 else [],
                 "row_plots": row_plots,
                 "bandwidth": plot_bandwidth(latest, args.out, written, target_list),
                 "golden": plot_golden(latest, args.out, written),
                 "replay": plot_replay(runs, latest, args.out, written),
                 "crossover": plot_crossover(latest, args.out, written),
                 "coverage": plot_coverage(runs, args.out, written)}
    page = render_page(runs, latest, baseline, bench_res, golden_res, perf, gold, plots, problems, args,
                       (target_lines, targets_error), recipe, plot_note)
    index = os.path.join(args.out, "index.html")
    vgrecord.write_text_atomic(index, page)
    return index, bench_res, golden_res, perf, gold, written, target_lines, recipe


def main(argv=None):
    ap = argparse.ArgumentParser(description="voltgate results report and regression verdict")
    ap.add_argument("--history", required=True, metavar="DIR", help="folder of results records")
    ap.add_argument("--out", required=True, metavar="DIR", help="folder for index.html and its plots")
    ap.add_argument("--baseline", metavar="COMMIT", help="compare with the latest run of this commit")
    ap.add_argument("--baseline-record", metavar="FILE", help="compare with the run holding this record")
    ap.add_argument("--min-effect", type=float, default=0.03, help="minimum slowdown of the median (0.03 = 3%%)")
    ap.add_argument("--alpha", type=float, default=0.05, help="significance level of the U test")
    ap.add_argument("--first-bad", metavar="TEXT",
                    help="the first bad commit a bisect named (ci/nightly --bisect), shown on the page")
    ap.add_argument("--targets", metavar="FILE", default=vgtargets.DEFAULT_FILE,
                    help="speed targets to check (default: reports/targets.json; 'none' for none)")
    args = ap.parse_args(argv)
    # written so that NaN fails too: a NaN min-effect flags nothing, a green nightly
    if not 0 < args.alpha < 1 or not 0 <= args.min_effect < math.inf:
        print("report.py: --alpha must be in (0, 1) and --min-effect >= 0", file=sys.stderr)
        return 2
    if args.baseline and args.baseline_record:
        print("report.py: give --baseline or --baseline-record, not both", file=sys.stderr)
        return 2
    records, problems = vgrecord.load_records(args.history, warn=lambda m: sys.stderr.write("report.py: " + m))
    if not records:
        print(f"report.py: no valid record in {args.history}", file=sys.stderr)
        return 2
    # A targets file that does not read costs the targets, never the verdict.
    target_list, targets_error = [], None
    try:
        target_list = [] if args.targets == "none" else vgtargets.load_targets(args.targets)
    except ValueError as exc:
        targets_error = str(exc)
        print(f"report.py: targets not checked: {exc}", file=sys.stderr)
    runs = group_runs(records)
    latest = max(runs, key=lambda r: (r.last_key, r.first_key))
    try:
        baseline = pick_baseline(runs, latest, args.baseline, args.baseline_record)
    except ValueError as exc:
        print(f"report.py: {exc}", file=sys.stderr)
        return 2
    try:
        index, bench_res, golden_res, perf, gold, _, target_lines, recipe = write_report(
            runs, latest, baseline, args, problems, target_list, targets_error)
    except OSError as exc:
        # a verdict without its page would read as a pass in a nightly
        print(f"report.py: cannot write the report in {args.out}: {exc.strerror or exc}"
              + (f" ({exc.filename})" if exc.filename else ""), file=sys.stderr)
        return 2
    print(f"report.py: wrote {index}", file=sys.stderr)
    compared = sum(1 for r in bench_res if r["p"] is not None)
    few = sum(1 for r in bench_res if r["verdict"] == "too few samples")
    base_text = f"{baseline.label} ({baseline.date})" if baseline else "none (first run)"
    print(f"latest {latest.label} ({latest.date}) vs baseline {base_text}: "
          f"{compared} benchmark rows tested, {few} with too few samples, {len(golden_res)} golden rows")
    if target_lines:
        print(vgtargets.summary(target_lines))
    elif targets_error:
        print(f"targets: not checked ({targets_error})")
    vanished = vanished_backends(latest, baseline)
    for backend, nbench, ngolden in vanished:
        print(f"VANISHED: the baseline ran {nbench} benchmark and {ngolden} golden rows on {backend}; "
              f"the latest run has none there (its missing parts: {'; '.join(latest.missing()) or 'none named'})")
    if perf or gold:
        print(markdown_table(perf, gold))
        cmds, why = recipe
        if cmds:
            print("\nTo pin it to a commit (reports/BISECT.md):\n" + "\n".join("    " + c for c in cmds))
        if why:
            print(f"\nBisect: {why}.")
        return 1
    if vanished:
        # a part that stopped running is not a pass; no row to bisect
        return 1
    if baseline is not None and not rows_compared(bench_res, golden_res):
        # A nightly must not go green by comparing nothing.
        print(nothing_compared_text(latest, baseline))
        return 2
    print("no regression")
    return 0


if __name__ == "__main__":
    sys.exit(main())
