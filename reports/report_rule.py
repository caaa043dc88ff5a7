"""The regression rule (report.py's docstring states it): the latest run
against its baseline, row by row, the flagged rows and the bisect recipe
that pins them to a commit.
"""
import os
import re
import shlex

import stats
from report_runs import _natural, current_row_name


FLAGGED_KINDS = ("kernel", "dispatch")


# ---- the regression rule ---------------------------------------------------------------

def compare_runs(latest, baseline, min_effect=0.03, alpha=0.05):
    """Returns (bench_results, golden_results).

    bench_results: one dict per benchmark row of the latest run, with the
    row, its baseline row (or None) and stats.compare_samples()'s fields; its
    "verdict" is regressed / improved / same / too few samples / new / info
    (a copy or peer row: compared, never flagged).  golden_results: one dict
    per golden row with "transition" PASS->FAIL, new FAIL, still FAIL,
    FAIL->PASS, PASS, new PASS."""
    bench = []
    for key in sorted(latest.bench, key=lambda k: (k[0], _natural(k[1]))):
        row = latest.bench[key]
        base = baseline.bench.get(key) if baseline else None
        res = {"key": key, "row": row, "base": base, "verdict": "new", "effect": None, "p": None,
               "method": None, "n_base": 0, "n_new": len(row["samples_us"]),
               "median_new": row["median_us"], "median_base": None}
        if base is not None:
            # The rule works on the samples alone: the U test and the effect
            # size on the medians of the same samples (the tools' medians,
            # shown on the page, are of the same samples).
            res.update(stats.compare_samples(base["samples_us"], row["samples_us"], min_effect, alpha))
            if row["kind"] not in FLAGGED_KINDS and res["verdict"] in ("regressed", "improved"):
                res["verdict"] = "info: " + ("slower" if res["verdict"] == "regressed" else "faster")
        bench.append(res)
    golden = []
    for key in sorted(latest.golden, key=lambda k: (k[0], _natural(k[1]), _natural(k[2]))):
        row = latest.golden[key]
        base = baseline.golden.get(key) if baseline else None
        now_ok = row["verdict"] == "PASS"
        if base is None:
            transition = "new PASS" if now_ok else "new FAIL"
        elif base["verdict"] == "PASS":
            transition = "PASS" if now_ok else "PASS->FAIL"
        else:
            transition = "FAIL->PASS" if now_ok else "still FAIL"
        golden.append({"key": key, "row": row, "base": base, "transition": transition,
                       "record": latest.golden_record.get(key)})
    return bench, golden


def rows_compared(bench_results, golden_results):
    """How many rows of the latest run the baseline also holds."""
    return (sum(1 for r in bench_results if r["base"] is not None)
            + sum(1 for g in golden_results if g["base"] is not None))


def nothing_compared_text(latest, baseline):
    """Why a baseline that shares no row with the latest run compares nothing."""
    def kinds(run):
        backends = sorted({k[0] for k in run.bench} | {k[0] for k in run.golden})
        return (f"{len(run.bench)} benchmark and {len(run.golden)} golden rows"
                + (f" on {', '.join(backends)}" if backends else ""))
    return (f"nothing compared: the baseline {baseline.label} ({kinds(baseline)}) shares no benchmark or "
            f"golden row with the latest run {latest.label} ({kinds(latest)})")


def vanished_backends(latest, baseline):
    """The backends whose rows the baseline holds and the latest run has none
    of, as (backend, bench rows, golden rows) of the baseline: the CUDA side
    that stopped running (a lost driver, a build without CUDA) compares
    nothing, so without this a nightly would pass on the CPU rows alone."""
    if baseline is None:
        return []

    def backends(run):
        return {k[0] for k in run.bench} | {k[0] for k in run.golden}
    now = backends(latest)
    return [(b, sum(1 for k in baseline.bench if k[0] == b), sum(1 for k in baseline.golden if k[0] == b))
            for b in sorted(backends(baseline) - now)]


def golden_by_case(golden_results):
    """Golden results grouped per (backend, case, transition): one line per
    case however many plans it has.  Returns dicts with the plans, the worst
    error (None when any is NaN) and its tolerance, in first-seen order."""
    groups = {}
    for g in golden_results:
        row = g["row"]
        key = (row["backend"], row["case"], g["transition"])
        d = groups.setdefault(key, {"backend": row["backend"], "case": row["case"], "family": row["family"],
                                    "path": row["path"], "transition": g["transition"], "plans": [],
                                    "worst": 0.0, "tol": row["tol_rel_rms"], "nan": False,
                                    "file": row["file"], "record": g.get("record"), "worst_plan": row["plan"]})
        d["plans"].append(row["plan"])
        if row["rel_rms"] is None:
            if not d["nan"]:
                d["worst_plan"] = row["plan"]
            d["nan"] = True
        elif row["rel_rms"] > d["worst"] and not d["nan"]:
            d["worst"], d["tol"], d["worst_plan"] = row["rel_rms"], row["tol_rel_rms"], row["plan"]
    return list(groups.values())


def reproduce_command(d):
    """The one command that runs a golden case's worst row again."""
    return (f"voltgate golden verify --backend {d['backend']} --plan {shlex.quote(d['worst_plan'])} "
            f"{shlex.quote(d['file'])} --case {shlex.quote(_glob_literal(d['case']))}")


def _worst(d):
    return "NaN" if d["nan"] else f"{d['worst']:.3g}"


def flagged(bench_results, golden_results):
    perf = [r for r in bench_results if r["verdict"] == "regressed"]
    gold = [g for g in golden_results if g["transition"] in ("PASS->FAIL", "new FAIL", "still FAIL")]
    return perf, gold


def _glob_literal(text):
    """text as an fnmatch pattern that matches only itself (ci/bisect-step
    matches --case and --perf name= with fnmatch)."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def _bench_cmd_for(row):
    """The bench command that measures row again: ci/regress's command for
    a CUDA row (one family and one shape set per run), the dispatch bench
    for a dispatch row, None where bisect-step's default (the CPU --quick
    set, as ci/regress runs it) already does."""
    if row["kind"] == "dispatch":
        return "{build}/bin/voltgate bench --dispatch --json {json}"
    if row["backend"] == "cpu":
        return None
    segs = row["name"].split("/")
    prefix = segs[0]
    shape = "wo_a" if prefix == "wo_a" else ("prefill" if prefix.startswith("prefill") else "dense")
    # Only the crossover writes the per-kind rows and the dense rows past
    # 16 rows (issue 31).
    if "/kind=" in row["name"] or (shape == "dense" and row.get("m", 0) > 16):
        shape = "crossover"
    extra = ""
    if shape == "wo_a":
        # The row's own tokens and path: the bench's defaults hold neither
        # the 32 and 64 tokens nor the moe paths that ci/regress asks for.
        tokens = next((s[1:] for s in segs if re.fullmatch(r"t[0-9]+", s)), None)
        extra += f" --tokens {tokens}" if tokens else ""
        extra += {"loop": " --paths loop", "grouped": " --paths grouped", "moe": " --paths moe",
                  "moe-skewed": " --paths moe --routing skewed"}.get(segs[1] if len(segs) > 1 else "", "")
    return f"{{build}}/bin/voltgate bench --backend {row['backend']} --family {row['family']} --shape {shape}" \
           f"{extra} --json {{json}}"


# A CPU step needs no CUDA build (nvcc on the GEMM sources is minutes a step).
CPU_BUILD_CMD = 'make -j"$(nproc)" CUDA=0 BUILD={build} all'


def _relative_iqr(samples):
    """(75th - 25th percentile) / median of samples; 0 with fewer than 4."""
    s = sorted(samples)
    if len(s) < 4 or stats.median(s) <= 0:
        return 0.0
    q = lambda f: s[min(len(s) - 1, int(round(f * (len(s) - 1))))]   # noqa: E731
    return (q(0.75) - q(0.25)) / stats.median(s)


def row_spread(runs, latest, key):
    """(spread, how): how far a row moves without a code change, from its own
    figures -- the widest of the relative IQR of its samples in each run and
    the spread of its medians over the runs before the latest ((max - min) /
    min) -- and the words that say which one it was."""
    earlier = [r.bench[key] for r in runs if r is not latest and key in r.bench]
    within = max((_relative_iqr(row["samples_us"]) for row in earlier + [latest.bench[key]]), default=0.0)
    medians = [row["median_us"] for row in earlier if row["median_us"]]
    between = (max(medians) - min(medians)) / min(medians) if len(medians) > 1 and min(medians) > 0 else 0.0
    if between >= within and len(medians) > 1:
        return between, f"its median moved {between * 100:.3g}% over the {len(medians)} runs before"
    return within, f"its samples' interquartile range reaches {within * 100:.3g}% of the median"


def bisect_recipe(latest, baseline, perf, gold, min_effect, alpha=0.05, runs=()):
    """(commands, note): the shell commands that pin what regressed between
    the baseline run and the latest to one commit with ci/bisect-step
    (reports/BISECT.md), and a note (or None) on what the reader should know
    -- or no commands and the reason bisecting cannot help.  runs: the whole
    history, for the row's own spread.

    Golden cases that passed at the baseline and fail now go first: they are
    exact, and only they are judged (--case), since a case that failed at
    the good end too makes every step "bad".  Else the benchmark row that
    slowed down most, against the baseline record that holds it, with a
    threshold halfway to its slowdown but never under --min-effect nor under
    the row's own spread (row_spread(): a step measured in another build
    moves that much with no code change), measured by the same bench command
    ci/regress ran for it."""
    if not (perf or gold) or baseline is None:
        return [], None
    short = latest.short[:7]
    if latest.commit == baseline.commit:
        if latest.dirty or baseline.dirty:
            return [], (f"the baseline and the latest run are both of {short}, at least one from a tree with "
                        "uncommitted changes: what changed is in no commit, so there is nothing to bisect")
        return [], (f"the baseline and the latest run are the same commit ({short}): no code changed in "
                    "between; a benchmark that moved is the machine or noise, run it again")
    if latest.dirty:
        return [], (f"the latest run is of {short} with uncommitted changes: the change may be in no commit "
                    "yet; commit it and run again before bisecting")
    notes = []
    if baseline.dirty:
        notes.append(f"the baseline run was of {baseline.short[:7]} with uncommitted changes, so its figures "
                     "are not quite that commit's")
    cmds = ["cp ci/bisect-step /tmp/bisect-step    # older commits have an older one, or none",
            f"git bisect start {latest.commit[:12]} {baseline.commit[:12]}    # bad, good"]
    new_fail = [g for g in gold if g["transition"] in ("PASS->FAIL", "new FAIL")]
    if len(new_fail) < len(gold):
        notes.append(f"{len({(g['row']['backend'], g['row']['case']) for g in gold if g not in new_fail})} "
                     "failing golden case(s) failed at the baseline too: bisecting them needs an earlier good run")
    if new_fail:
        failed = {g["row"]["backend"] for g in new_fail}
        backend = "cpu" if "cpu" in failed else sorted(failed)[0]      # the CPU is the cheaper step
        cases = sorted({g["row"]["case"] for g in new_fail if g["row"]["backend"] == backend})
        cmds.append("git bisect run /tmp/bisect-step --golden "
                    + " ".join(f"--case {shlex.quote(_glob_literal(c))}" for c in cases)
                    + " --build build-bisect"
                    + (f" --backend {backend}" if backend != "cpu" else f" --build-cmd {shlex.quote(CPU_BUILD_CMD)}"))
    elif perf:
        worst = max(perf, key=lambda r: r["effect"])
        row = worst["row"]
        if "," in row["name"]:
            return [], f"the row {row['name']!r} has a comma in its name, which bisect-step's --perf cannot take"
        # The record may hold the row under a legacy name (report_runs.LEGACY_ROW_PREFIXES):
        # bisect-step matches either.
        holder = next((r["_file"] for r in baseline.records
                       if any((b["backend"], current_row_name(b["backend"], b["name"])) == worst["key"]
                              for b in r["bench"])),
                      None)
        if holder is None:
            return [], f"no record of the baseline run holds the row {row['name']!r}"
        spread, spread_how = row_spread(runs, latest, worst["key"])
        limit = max(min_effect, worst["effect"] / 2, spread)
        bench_cmd = _bench_cmd_for(row)
        cmds.append(f"git bisect run /tmp/bisect-step --baseline-record {shlex.quote(os.path.abspath(holder))} "
                    f"--max-regression {limit * 100:.3g}% --perf {shlex.quote('name=' + _glob_literal(row['name']))} "
                    "--build build-bisect"
                    + (f" --alpha {alpha:g}" if alpha != 0.05 else "")
                    + (f" --backend {row['backend']}" if row["backend"] != "cpu"
                       else f" --build-cmd {shlex.quote(CPU_BUILD_CMD)}")
                    + (f" --bench-cmd {shlex.quote(bench_cmd)}" if bench_cmd else ""))
        why_limit = ("half its slowdown" if limit == worst["effect"] / 2 else
                     "its own spread" if limit == spread else "--min-effect")
        notes.append(f"the step is bad above {limit * 100:.3g}% slower than the baseline: the largest of "
                     f"half of {row['name']}'s slowdown of {worst['effect'] * 100:+.1f}%, --min-effect "
                     f"({min_effect * 100:.3g}%) and the row's own spread ({spread_how}); here "
                     f"{why_limit} sets it")
        if limit >= worst["effect"]:
            notes.append("that spread is as large as the slowdown itself: a step's verdict may be noise, "
                         "measure the row again before trusting the first bad commit")
    else:
        return [], notes[-1]
    cmds.append("git bisect reset")
    return cmds, "; ".join(notes) or None


def markdown_table(perf, gold, limit=20):
    """The flagged rows as markdown, at most limit rows per table."""
    lines = []
    if perf:
        lines.append("| benchmark | backend | baseline us | latest us | change | p (MWU) | n |")
        lines.append("|---|---|---:|---:|---:|---:|---|")
        for r in perf[:limit]:
            lines.append(f"| {r['row']['name']} | {r['row']['backend']} | {r['median_base']:.4g} | "
                         f"{r['median_new']:.4g} | {r['effect'] * 100:+.1f}% | {r['p']:.2g} "
                         f"({r['method']}) | {r['n_base']}/{r['n_new']} |")
        if len(perf) > limit:
            lines.append(f"| ... and {len(perf) - limit} more benchmark rows (see the report) | | | | | | |")
    if gold:
        if lines:
            lines.append("")
        cases = golden_by_case(gold)
        lines.append("| golden case | backend | change | plans | worst rel RMS | tolerance |")
        lines.append("|---|---|---|---:|---:|---:|")
        for d in cases[:limit]:
            plans = d["plans"][0] if len(d["plans"]) == 1 else f"{len(d['plans'])} plans"
            lines.append(f"| {d['case']} | {d['backend']} | {d['transition']} | {plans} | {_worst(d)} | "
                         f"{d['tol']:.3g} |")
        if len(cases) > limit:
            lines.append(f"| ... and {len(cases) - limit} more golden cases (see the report) | | | | | |")
    return "\n".join(lines)
