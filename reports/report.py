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

stdout gets the flagged rows as a short markdown table.  Exit status: 0 no
regression, 1 something regressed or a golden case fails, 2 bad usage or no
usable record.
"""
import argparse
import html
import os
import re
import shlex
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record as vgrecord  # noqa: E402
import stats  # noqa: E402
import targets as vgtargets  # noqa: E402

FLAGGED_KINDS = ("kernel", "dispatch")


# ---- runs: merging the records of one commit from many runners ------------------------

class Run:
    """The records of one run: one commit (and dirty state, or one run_id),
    at most one record per (runner, shard)."""

    def __init__(self, key):
        self.key = key
        self.records = []
        self.bench = {}         # (backend, name) -> row
        self.golden = {}        # (backend, case, plan) -> row
        self.golden_record = {}  # (backend, case, plan) -> the record file holding it
        self.duplicates = []    # rows that two records both had

    @property
    def commit(self):
        return self.records[0]["commit"]

    @property
    def short(self):
        return self.records[0]["short_commit"][:10]

    @property
    def dirty(self):
        return any(r["dirty"] for r in self.records)

    @property
    def label(self):
        return self.short[:7] + ("*" if self.dirty else "")

    @property
    def date(self):
        return max(r["date"] for r in self.records)

    # Ordering uses these, not the dates: runs written within one second
    # (a fast machine, or a test) still sort in the order they were written.
    @property
    def first_key(self):
        return min(vgrecord.order_key(r) for r in self.records)

    @property
    def last_key(self):
        return max(vgrecord.order_key(r) for r in self.records)

    def slots(self):
        return {(r["runner"], r["shard"]) for r in self.records}

    def add(self, rec):
        self.records.append(rec)
        for row in rec["bench"]:
            if row["kind"] == "copy" and rec["shard"] is not None:
                # Every shard's runner measures its own copy bandwidth.
                row = dict(row, name=f"{row['name']} [{rec['runner']}]")
            key = (row["backend"], row["name"])
            if key in self.bench:
                self.duplicates.append(f"bench {row['backend']} {row['name']} in {rec['_file']}")
                continue
            self.bench[key] = row
        for row in rec["golden"]:
            key = (row["backend"], row["case"], row["plan"])
            if key in self.golden:
                self.duplicates.append(f"golden {key} in {rec['_file']}")
                continue
            self.golden[key] = row
            self.golden_record[key] = rec["_file"]

    def replays(self):
        return [(r["runner"], r["replay"]) for r in self.records if r["replay"] is not None]

    def coverage(self):
        for r in self.records:
            if r["coverage"] is not None:
                return r["coverage"]
        return None

    def v100_model(self):
        for r in self.records:
            if r.get("v100_model"):
                return r["v100_model"]
        return None

    def missing(self):
        out = []
        for r in self.records:
            for m in r["missing"]:
                text = m if len(self.records) == 1 else f"{r['runner']}: {m}"
                if text not in out:
                    out.append(text)
        return out

    def copy_bandwidths(self):
        out = []
        for r in self.records:
            for b in r["bench_runs"]:
                if b["copy_bandwidth_gbs"]:
                    out.append((r["runner"], b["backend"], b["copy_bandwidth_gbs"]))
        return out


def group_runs(records):
    """Merges records into runs, oldest first.

    Records with the same run_id (or, without one, the same commit and dirty
    flag) are one run, unless a (runner, shard) pair repeats: a second
    record from the same runner and shard starts a new run of that commit
    (a rerun), so shards of one nightly merge and reruns stay apart."""
    latest_by_key = {}
    runs = []
    for rec in sorted(records, key=vgrecord.order_key):
        key = ("id", rec["run_id"]) if rec["run_id"] else ("commit", rec["commit"], rec["dirty"])
        run = latest_by_key.get(key)
        if run is None or (rec["runner"], rec["shard"]) in run.slots():
            run = Run(key)
            latest_by_key[key] = run
            runs.append(run)
        run.add(rec)
    runs.sort(key=lambda r: (r.first_key, r.key))
    return runs


def pick_baseline(runs, latest, commit=None, record_file=None):
    """The baseline run, or None; raises ValueError for a baseline asked for
    that does not exist."""
    others = [r for r in runs if r is not latest]
    if record_file:
        want = os.path.realpath(record_file)
        for run in others:
            if any(os.path.realpath(rec["_file"]) == want for rec in run.records):
                return run
        for rec in latest.records:
            if os.path.realpath(rec["_file"]) == want:
                raise ValueError(f"--baseline-record {record_file}: that record is part of the latest run")
        raise ValueError(f"--baseline-record {record_file}: not a valid record in the history")
    if commit:
        matches = [r for r in others if r.commit.startswith(commit.lower())]
        if not matches:
            raise ValueError(f"--baseline {commit}: no earlier run of that commit in the history")
        return max(matches, key=lambda r: r.last_key)
    before = [r for r in others if r.first_key <= latest.first_key]
    return before[-1] if before else None


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
    prefix = row["name"].split("/", 1)[0]
    shape = "wo_a" if prefix == "wo_a" else ("prefill" if prefix.startswith("prefill") else "dense")
    return f"{{build}}/bin/voltgate bench --backend {row['backend']} --family {row['family']} --shape {shape} " \
           "--json {json}"


# A CPU step needs no CUDA build (nvcc on gemm.cu is minutes a step).
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
        holder = next((r["_file"] for r in baseline.records
                       if any(b["backend"] == row["backend"] and b["name"] == row["name"] for b in r["bench"])),
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


# ---- plots ----------------------------------------------------------------------------------

def matplotlib_missing():
    """None when matplotlib imports, else why it does not."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        return f"matplotlib is not installed for {sys.executable} ({exc})"
    return None


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 11, "axes.titlesize": 13, "axes.labelsize": 11,
                         "legend.fontsize": 9, "figure.dpi": 100, "axes.grid": True,
                         "grid.alpha": 0.3})
    return plt


def _save(fig, out_dir, name, written):
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    written.append(name)
    return name


def _short_name(name, family, path):
    """The part of a row name that tells the lines of one plot apart."""
    parts = [p for p in name.split("/") if p not in (family, path)]
    return "/".join(parts) or name


def run_labels(runs):
    """Short labels for the x axis: the commit, plus the time when one
    commit has several runs."""
    counts = {}
    for r in runs:
        counts[r.label] = counts.get(r.label, 0) + 1
    return [r.label + (" " + r.date[11:16] if counts[r.label] > 1 else "") for r in runs]


def plot_history(runs, out_dir, written, max_lines=8, regressed=(), row_plots=None):
    """One PNG per (backend, family, path): each row's median over runs with a
    min-max band, the latest point of a regressed row ringed in red, each run
    on the x axis by commit and date.  Returns [(title, png)]; row_plots, when
    given, gets {(backend, name): png}."""
    regressed = set(regressed)
    plt = _plt()
    groups = {}
    for run in runs:
        for (backend, name), row in run.bench.items():
            groups.setdefault((backend, row["kind"], row["family"], row["path"]), set()).add(name)
    out = []
    all_labels = [f"{label}\n{run.date[5:10]}" for label, run in zip(run_labels(runs), runs)]
    for (backend, kind, family, path), names in sorted(groups.items()):
        names = sorted(names, key=_natural)
        # Only the runs that measured this group take a place on the x axis.
        idx = [i for i, run in enumerate(runs) if any((backend, n) in run.bench for n in names)]
        sub = [runs[i] for i in idx]
        labels = [all_labels[i] for i in idx]
        xs = list(range(len(sub)))
        for part in range(0, len(names), max_lines):
            chunk = names[part:part + max_lines]
            fig, ax = plt.subplots(figsize=(6.0, 3.6))
            lo_all, hi_all = [], []
            for i, name in enumerate(chunk):
                pts = [(x, run.bench.get((backend, name))) for x, run in zip(xs, sub)]
                pts = [(x, r) for x, r in pts if r is not None]
                if not pts:
                    continue
                px = [x for x, _ in pts]
                med = [r["median_us"] for _, r in pts]
                lo = [r["min_us"] for _, r in pts]
                hi = [r["max_us"] for _, r in pts]
                color = f"C{i % 10}"
                ax.fill_between(px, lo, hi, color=color, alpha=0.18, linewidth=0)
                ax.plot(px, med, marker="o", markersize=4, color=color,
                        label=_short_name(name, family, path))
                if (backend, name) in regressed and sub[px[-1]] is runs[-1]:
                    ax.scatter([px[-1]], [med[-1]], s=110, facecolors="none", edgecolors="red",
                               linewidths=1.8, zorder=4)
                lo_all += lo
                hi_all += hi
            if lo_all and min(lo_all) > 0 and max(hi_all) / min(lo_all) > 20:
                ax.set_yscale("log")
            ax.set_xticks(xs)
            rotate = len(xs) > 5 or any(len(lb) > 9 for lb in labels)
            ax.set_xticklabels(labels, rotation=30 if rotate else 0, ha="right" if rotate else "center")
            if len(xs) == 1:
                ax.set_xlim(-0.5, 0.5)
            ax.set_ylabel("median us (band: min-max)")
            ax.set_xlabel("commit (* = dirty tree) and date; red ring: regressed")
            what = " ".join(w for w in (family, path) if w not in ("n/a", "", "-"))
            title = f"{backend} {kind}" + (f": {what}" if what else "") + (f" ({part // max_lines + 1})" if len(names) > max_lines else "")
            ax.set_title(title)
            ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=10)
            png = _save(fig, out_dir, f"history-{_slug(title)}.png", written)
            out.append((title, png))
            if row_plots is not None:
                row_plots.update({(backend, n): png for n in chunk})
            # Next to the time trend, the same rows' bandwidth fraction trend:
            # a time that moves with the machine's copy bandwidth is not the
            # kernel's doing.
            if kind == "kernel":
                bw_png = _plot_bandwidth_trend(plt, sub, xs, labels, backend, chunk, family, path, title,
                                               out_dir, written)
                if bw_png:
                    out.append((title + ": bandwidth fraction", bw_png))
    return out


def _plot_bandwidth_trend(plt, sub, xs, labels, backend, names, family, path, title, out_dir, written):
    """One PNG: each row's bandwidth fraction over the runs; None when no
    row has one."""
    series = []
    for i, name in enumerate(names):
        pts = [(x, run.bench.get((backend, name))) for x, run in zip(xs, sub)]
        pts = [(x, r["bandwidth_fraction"]) for x, r in pts if r is not None and r.get("bandwidth_fraction")]
        if pts:
            series.append((i, name, pts))
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for i, name, pts in series:
        ax.plot([x for x, _ in pts], [v for _, v in pts], marker="o", markersize=4, color=f"C{i % 10}",
                label=_short_name(name, family, path))
    ax.set_xticks(xs)
    rotate = len(xs) > 5 or any(len(lb) > 9 for lb in labels)
    ax.set_xticklabels(labels, rotation=30 if rotate else 0, ha="right" if rotate else "center")
    if len(xs) == 1:
        ax.set_xlim(-0.5, 0.5)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("bandwidth fraction (of copy)")
    ax.set_xlabel("commit (* = dirty tree) and date")
    ax.set_title(title + ": bandwidth fraction")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=10)
    return _save(fig, out_dir, f"history-{_slug(title)}-bw.png", written)


def plot_bandwidth(run, out_dir, written, target_list=()):
    """Bandwidth fraction per path and family of the latest run, per backend,
    with a line at each bandwidth target."""
    plt = _plt()
    out = []
    bw_targets = {}
    for t in target_list:
        if t["value"] == "bandwidth_fraction":
            bw_targets.setdefault(t["min"], set()).add(t["id"])
    backends = sorted({b for b, _ in run.bench})
    for backend in backends:
        rows = [r for (b, _), r in run.bench.items() if b == backend and r["kind"] == "kernel"
                and r["bandwidth_fraction"] is not None]
        if not rows:
            continue
        families = sorted({r["family"] for r in rows})
        paths = sorted({r["path"] for r in rows})
        fig, ax = plt.subplots(figsize=(8.5, 3.9))
        width = 0.8 / max(len(paths), 1)
        for j, path in enumerate(paths):
            best, pts_x, pts_y = [], [], []
            for i, fam in enumerate(families):
                vals = [r["bandwidth_fraction"] for r in rows if r["family"] == fam and r["path"] == path]
                x = i + (j - (len(paths) - 1) / 2) * width
                best.append(max(vals) if vals else 0.0)
                pts_x += [x] * len(vals)
                pts_y += vals
            xs = [i + (j - (len(paths) - 1) / 2) * width for i in range(len(families))]
            ax.bar(xs, best, width * 0.9, color=f"C{j}", alpha=0.55, label=f"{path} (bar: best row)")
            ax.scatter(pts_x, pts_y, s=12, color=f"C{j}", edgecolor="black", linewidth=0.4, zorder=3)
        # The bandwidth targets of targets.json, named by id (the id says which
        # family: issue 4's 0.80 is fp8's), set for the GPU kernels: a CPU plot
        # does not draw them.  The highest label sits above its line, the
        # others below theirs, so that two close targets do not print over
        # each other.
        for level, sources in sorted(bw_targets.items() if backend != "cpu" else (), reverse=True):
            top = level == max(bw_targets)
            ax.axhline(level, color="red", linestyle="--", linewidth=1)
            ax.text(-0.45, level + (0.01 if top else -0.01), f"{level:.2f} target ({', '.join(sorted(sources))})",
                    color="red", va="bottom" if top else "top", ha="left", fontsize=9)
        ax.set_xticks(range(len(families)))
        ax.set_xticklabels(families)
        top = max(r["bandwidth_fraction"] for r in rows)
        # A CPU row's fraction is small (no target line to reach): scale to it.
        ax.set_ylim(0, max(1.05, top * 1.1) if backend != "cpu" else max(top * 1.25, 1e-3))
        ax.set_ylabel("weight bytes / time / copy bandwidth")
        title = f"{backend}: bandwidth fraction per family and path (dots: each row)"
        ax.set_title(title)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        out.append((title, _save(fig, out_dir, f"bandwidth-{backend}.png", written)))
    return out


def _ratio(v, tol):
    return v / tol if v is not None and tol else None


def plot_golden(run, out_dir, written):
    """Golden relative RMS error per family and path against its tolerance,
    and each row's error as a fraction of its tolerances (both metrics)."""
    plt = _plt()
    out = []
    rows = list(run.golden.values())
    if not rows:
        return out
    cats = sorted({(r["family"], r["path"]) for r in rows})
    backends = sorted({r["backend"] for r in rows})
    floor = 1e-12
    views = (
        ("rel_rms", "relative RMS error", lambda r: r["rel_rms"],
         lambda cat: {r["tol_rel_rms"] for r in rows if (r["family"], r["path"]) == cat},
         "golden relative RMS error per family and path vs its tolerance (red)"),
        ("headroom", "error / tolerance", lambda r: max([x for x in (_ratio(r["rel_rms"], r["tol_rel_rms"]),
                                                                     _ratio(r["max_abs"], r["tol_max_abs"]))
                                                         if x is not None] or [None]),
         lambda cat: {1.0},
         "golden error as a fraction of its tolerance (worse of rel RMS and max abs; 1 = limit)"),
    )
    for key, label, value, tols, title in views:
        fig, ax = plt.subplots(figsize=(max(9.0, 0.45 * len(cats) + 2.5), 4.4))
        # A row without an error (NaN in the tool: an unwritten or poisoned
        # output) is drawn above everything, not at the bottom.
        finite = [value(r) for r in rows if value(r) is not None and value(r) > 0]
        top = max(finite + [t for c in cats for t in tols(c)]) * 30.0
        nan_x = []
        for bi, backend in enumerate(backends):
            for verdict, color, marker in (("PASS", "tab:green", "o"), ("FAIL", "tab:red", "X")):
                xs, ys = [], []
                for ci, cat in enumerate(cats):
                    for r in rows:
                        if (r["family"], r["path"]) == cat and r["backend"] == backend and \
                                (r["verdict"] == "PASS") == (verdict == "PASS"):
                            v = value(r)
                            x = ci + (bi - (len(backends) - 1) / 2) * 0.3
                            if v is None:
                                nan_x.append(x)
                                continue
                            xs.append(x)
                            ys.append(max(v, floor))
                if xs:
                    ax.scatter(xs, ys, s=24 if verdict == "PASS" else 70, marker=marker, alpha=0.75,
                               color=color if len(backends) == 1 or verdict == "FAIL" else f"C{bi}",
                               edgecolor="black", linewidth=0.3,
                               label=f"{backend} {verdict}" if len(backends) > 1 else verdict)
        if nan_x:
            ax.scatter(nan_x, [top] * len(nan_x), s=70, marker="^", color="tab:red", edgecolor="black",
                       linewidth=0.3, label=f"no error value (NaN): {len(nan_x)}", zorder=4)
        for ci, cat in enumerate(cats):
            for t in tols(cat):
                ax.hlines(t, ci - 0.45, ci + 0.45, color="red", linewidth=2)
        ax.plot([], [], color="red", linewidth=2, label="tolerance" if key == "rel_rms" else "limit (1)")
        ax.set_yscale("log")
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels([f"{f} {p}" for f, p in cats], rotation=40, ha="right", fontsize=10)
        ax.set_xlim(-0.6, len(cats) - 0.4)
        for ci in range(1, len(cats)):           # a faint rule between families
            if cats[ci][0] != cats[ci - 1][0]:
                ax.axvline(ci - 0.5, color="#999", linewidth=0.8)
        ax.set_ylabel(label + " (log)")
        ax.set_title(title, fontsize=12)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        out.append((title, _save(fig, out_dir, f"golden-{key}.png", written)))
    return out


def plot_replay(runs, latest, out_dir, written):
    """Shapes measured during serving over runs, and the latest per-request dispatch."""
    plt = _plt()
    out = []
    hist = [(i, run) for i, run in enumerate(runs) if run.replays()]
    if not hist:
        return out
    reps = latest.replays()
    if reps:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    else:                                   # the latest run has no replay: history only
        fig, a1 = plt.subplots(figsize=(6, 3.8))
    xs = [i for i, _ in hist]
    warm = [sum(rp["warmup_measured"] for _, rp in run.replays()) for _, run in hist]
    serve = [sum(rp["serving_measured"] for _, rp in run.replays()) for _, run in hist]
    a1.plot(xs, warm, marker="o", label="measured in warm-up")
    a1.plot(xs, serve, marker="s", color="red", label="measured during serving (want 0)")
    a1.set_xticks(xs)
    labels = run_labels(runs)
    a1.set_xticklabels([labels[i] for i, _ in hist], rotation=30, ha="right")
    a1.set_ylabel("shapes measured")
    a1.set_title("replay: shapes measured per run")
    a1.legend(fontsize=9)
    if reps:
        per = reps[0][1]["per_request"]
        idx = list(range(1, len(per) + 1))
        colors = ["tab:red" if p["measured"] else ("tab:orange" if p["new_shape"] else "tab:blue") for p in per]
        a2.bar(idx, [p["dispatch_us"] or 0 for p in per], color=colors)
        from matplotlib.patches import Patch
        a2.legend(handles=[Patch(color="tab:blue", label="known shape"),
                           Patch(color="tab:orange", label="new shape, not measured"),
                           Patch(color="tab:red", label="measured while serving")], fontsize=8,
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        if len(per) <= 24:
            a2.set_xticks(idx)
            a2.set_xticklabels([str(p["prompt"]) for p in per], rotation=45, ha="right", fontsize=9)
            a2.set_xlabel("request (prompt tokens)")
        else:
            a2.set_xlabel("request")
        a2.set_ylabel("dispatch us")
        a2.set_title(f"latest replay per request ({reps[0][0]})")
    out.append(("replay", _save(fig, out_dir, "replay.png", written)))
    return out


def plot_coverage(runs, out_dir, written):
    plt = _plt()
    hist = [(i, run.coverage()) for i, run in enumerate(runs) if run.coverage()]
    if not hist:
        return []
    fig, ax = plt.subplots(figsize=(7.2, 3.4))
    xs = [i for i, _ in hist]
    ax.plot(xs, [c["line_percent"] or 0 for _, c in hist], marker="o", label="line %")
    ax.plot(xs, [c["branch_percent"] or 0 for _, c in hist], marker="s", label="branch %")
    ax.axhline(85, color="red", linestyle="--", linewidth=1, label="85 % gate (lines)")
    ax.set_xticks(xs)
    labels = run_labels(runs)
    ax.set_xticklabels([labels[i] for i in xs], rotation=30, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel("percent")
    ax.set_title("coverage over runs")
    ax.legend(loc="lower left", fontsize=9)
    return [("coverage", _save(fig, out_dir, "coverage.png", written))]


# ---- the page ----------------------------------------------------------------------------------

def _natural(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _slug(s):
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()


def _e(v):
    return html.escape(str(v))


def loop_vs_grouped(run):
    """Rows of the loop-vs-grouped table: rows whose names differ only in
    the path segment (".../loop/..." vs ".../grouped/...") pair up."""
    pairs = {}
    for (backend, name), row in run.bench.items():
        if row["kind"] != "kernel" or row["path"] not in ("loop", "grouped"):
            continue
        segs = name.split("/")
        if row["path"] in segs:
            segs[segs.index(row["path"])] = "*"
            variant = "/".join(segs)
        else:
            variant = f"{row['family']}/n{row['n']}/k{row['k']}/g{row['groups']}/t{row['tokens']}"
        pairs.setdefault((backend, variant), {})[row["path"]] = row
    out = []
    for (backend, variant), d in pairs.items():
        if "loop" in d and "grouped" in d:
            lp, gr = d["loop"], d["grouped"]
            errs = [v for v in (lp["max_rel_rms"], gr["max_rel_rms"]) if v is not None]
            out.append({"backend": backend, "variant": variant, "family": gr["family"], "tokens": gr["tokens"],
                        "loop_us": lp["median_us"], "grouped_us": gr["median_us"],
                        "ratio": lp["median_us"] / gr["median_us"] if gr["median_us"] else None,
                        "bw": gr["bandwidth_fraction"], "ceil": gr.get("ceiling_fraction"),
                        "rel_rms": max(errs) if errs else None})
    out.sort(key=lambda r: (r["backend"], r["family"], _natural(r["variant"].replace(f"/t{r['tokens']}/", "/")),
                            r["tokens"]))
    return out


def tuner_vs_heuristic(run, margin=0.10):
    """Rows of the tuner table: each kernel row measured with tune=on (the
    runtime's measure decision) next to the same row with tune=off (the
    heuristic), where the two picked different plans.  "loss" is how much
    slower the tuner's pick ran (negative: faster); beyond +-margin the row
    is marked.  Since 2026-12-03 the tuner times back to back over rotating
    weight copies as the bench does, so a marked "slower" row is a finding
    (kernels/cuda/NOTES.md, session 8), not the expected disagreement of
    the older one-launch timer."""
    pairs = {}
    for (backend, name), row in run.bench.items():
        segs = name.split("/")
        side = next((t for t in ("on", "off") if f"tune={t}" in segs), None)
        if row["kind"] != "kernel" or side is None:
            continue
        segs[segs.index(f"tune={side}")] = "tune=*"
        pairs.setdefault((backend, "/".join(segs)), {})[side] = row
    out = []
    for (backend, variant), d in pairs.items():
        on, off = d.get("on"), d.get("off")
        if not on or not off or on["plan"] == off["plan"] or not off["median_us"]:
            continue
        loss = on["median_us"] / off["median_us"] - 1.0
        out.append({"backend": backend, "variant": variant, "family": on["family"],
                    "heuristic_plan": off["plan"], "heuristic_us": off["median_us"],
                    "tuned_plan": on["plan"], "tuned_us": on["median_us"], "decision": on["decision"],
                    "loss": loss, "mark": "slower" if loss > margin else ("faster" if loss < -margin else "")})
    out.sort(key=lambda r: (-r["loss"], r["backend"], _natural(r["variant"])))
    return out


CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px auto;
       max-width: 1800px; color: #1b1b1b; line-height: 1.4; font-size: 15px; padding: 0 12px; }
h1 { font-size: 26px; margin-bottom: 4px; } h2 { font-size: 20px; margin-top: 34px;
     border-bottom: 2px solid #ddd; padding-bottom: 4px; }
table { border-collapse: collapse; margin: 8px 0 16px 0; font-size: 14px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; } td { white-space: nowrap; } th { background: #f0f0f0; text-align: left; }
td.prose { white-space: normal; min-width: 22em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.bad { background: #fbdada; } .good { background: #dcf3dc; } .warn { background: #fff3cd; }
.muted { color: #666; } .verdict { font-size: 20px; font-weight: bold; padding: 8px 12px;
     display: inline-block; border-radius: 4px; }
.grid { display: flex; flex-wrap: wrap; gap: 10px; } .grid img { max-width: 600px; width: 100%; }
img.wide { max-width: 100%; } .scroll { overflow-x: auto; max-width: 100%; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f4f4f4; padding: 6px 8px; } .scroll table { font-size: 13px; } code { background: #f4f4f4; padding: 0 3px; }
details summary { cursor: pointer; font-weight: bold; margin: 6px 0; }
"""


class Html(str):
    """A table cell that is already HTML (a link): _table() does not escape it."""


def _link(href, text):
    return Html(f"<a href='{_e(href)}'>{_e(text)}</a>")


def _anchor(png):
    return "plot-" + _slug(os.path.splitext(png)[0])


def _table(headers, rows, classes=None):
    """A table in its own horizontally scrolling box: a wide table scrolls
    there instead of running off the page."""
    out = ["<div class='scroll'><table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) + "</tr>"]
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        cells = []
        for c in row:
            if isinstance(c, Html):
                cells.append(f"<td>{c}</td>")
                continue
            num = isinstance(c, (int, float)) or (isinstance(c, str) and re.match(r"^[-+]?[\d.]+(e[-+]?\d+)?%?$", c))
            # Long prose (a target's text) wraps, so its table can fit the window.
            long_text = isinstance(c, str) and len(c) > 60 and " " in c
            cells.append(f'<td class="num">{_e(c)}</td>' if num else
                         f"<td class='prose'>{_e(c)}</td>" if long_text else f"<td>{_e(c)}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</table></div>")
    return "\n".join(out)


def _fmt(v, spec="{:.4g}"):
    return "n/a" if v is None else spec.format(v)


def _href(path, out_dir):
    """A link from the page in out_dir to a file named as the tools named it
    (relative to the folder the report runs in, as ci/regress runs it)."""
    return os.path.relpath(os.path.abspath(path), os.path.abspath(out_dir)) if out_dir else path


def golden_case_table(cases, limit=60, out_dir=None):
    """Failing (or recovered) golden cases, one line per case: the case links
    to its golden file, the record to the results record holding it, and the
    command runs its worst row again."""
    rows, cls = [], []
    for d in cases[:limit]:
        plans = ", ".join(d["plans"]) if len(d["plans"]) <= 3 else f"{len(d['plans'])} plans"
        record_cell = _link(_href(d["record"], out_dir), os.path.basename(d["record"])) if d.get("record") else "-"
        rows.append([d["backend"], _link(_href(d["file"], out_dir), d["case"]), d["family"], d["path"],
                     d["transition"], plans, _worst(d), _fmt(d["tol"], "{:.3g}"),
                     Html(f"<code>{_e(reproduce_command(d))}</code>"), record_cell])
        cls.append("good" if d["transition"] == "FAIL->PASS" else "bad")
    out = _table(["backend", "golden case (its file)", "family", "path", "change", "plans", "worst rel RMS",
                  "tolerance", "reproduce", "record"], rows, cls)
    if len(cases) > limit:
        out += f"<p>... and {len(cases) - limit} more cases (all of them under Golden error below).</p>"
    return out


def v100_model_section(rows):
    """The V100 ceiling (model) table: one row per plan tile, a column per
    family, each cell the ceiling and the binding pipe."""
    fams = sorted({r["family"] for r in rows}, key=_natural)
    tiles = sorted({(r["kind"], r["tile"]) for r in rows}, key=lambda t: (t[0], _natural(t[1])))
    cell = {}
    for r in rows:
        c = cell.setdefault((r["tile"], r["family"]), r)   # the Words and byte-wise Deq share a tile:
        if (r.get("ceiling") or 0) < (c.get("ceiling") or 0):  # show the lower ceiling
            cell[(r["tile"], r["family"])] = r
    body, classes = [], []
    for kind, tile in tiles:
        line = [tile]
        worst = 1.0
        for f in fams:
            r = cell.get((tile, f))
            if not r or r.get("ceiling") is None:
                line.append("")
                continue
            worst = min(worst, r["ceiling"])
            line.append(f"{100 * r['ceiling']:.0f} % ({r['bound']}{', ' + str(r['shfl']) + ' SHFL' if r['shfl'] else ''})")
        body.append(line)
        classes.append("good" if worst >= 0.9 else "bad" if worst < 0.5 else "")
    return ("<h2>V100 ceiling (model)</h2><p class='muted'>From the sm_70 SASS of each kernel's hot loop "
            "(reports/sass_model.py): the fraction of V100 DRAM bandwidth (decode) or tensor peak (tiled) "
            "its instructions allow, and the pipe that binds. An upper bound, not a measurement: no V100 "
            "ran.</p>" + _table(["plan tile"] + [f"{f} (V100 ceiling, model)" for f in fams], body, classes))


def render_page(runs, latest, baseline, bench_res, golden_res, perf, gold, plots, problems, args,
                checked, recipe, plot_note=None):
    """checked: (target lines, or None with the error that stopped them);
    recipe: bisect_recipe()'s (commands, note)."""
    p = []
    p.append("<!DOCTYPE html><html><head><meta charset='utf-8'><title>voltgate results "
             f"{_e(latest.label)}</title><style>{CSS}</style></head><body>")
    p.append(f"<h1>voltgate results: {_e(latest.short)}{' (dirty tree)' if latest.dirty else ''}</h1>")
    p.append(f"<p class='muted'>latest run {_e(latest.date)}, {len(latest.records)} record(s); "
             f"baseline: {_e(baseline.short + ('*' if baseline.dirty else '') + ' of ' + baseline.date) if baseline else 'none (first run)'}; "
             f"{len(runs)} run(s) in the history.</p>")
    missing = latest.missing()
    incomplete = f" (incomplete run: {len(missing)} part(s) not measured, listed below)" if missing else ""
    if perf or gold:
        p.append(f"<div class='verdict bad'>REGRESSED: {len(perf)} benchmark row(s), "
                 f"{len(gold)} golden row(s){_e(incomplete)}</div>")
    elif baseline is None:
        p.append(f"<div class='verdict warn'>first run: nothing to compare{_e(incomplete)}</div>")
    elif not rows_compared(bench_res, golden_res):
        p.append(f"<div class='verdict bad'>{_e(nothing_compared_text(latest, baseline))}</div>")
    else:
        p.append(f"<div class='verdict {'warn' if missing else 'good'}'>no regression{_e(incomplete)}</div>")
    # One line a reader can stop at.
    n_gold = len(golden_res)
    n_gold_pass = sum(1 for g in golden_res if g["row"]["verdict"] == "PASS")
    tested = sum(1 for r in bench_res if r["p"] is not None)
    few = sum(1 for r in bench_res if r["verdict"] == "too few samples")
    parts = [f"golden {n_gold_pass}/{n_gold} pass" if n_gold else "golden: none",
             f"bench {len(bench_res)} rows ({len(perf)} regressed, {tested} tested, {few} too few samples)"
             if bench_res else "bench: none"]
    reps = latest.replays()
    if reps:
        parts.append(f"replay: {sum(rp['serving_measured'] for _, rp in reps)} shape(s) measured during serving")
    cov = latest.coverage()
    if cov and cov["line_percent"] is not None:
        parts.append(f"coverage {cov['line_percent']:.1f} % lines")
    p.append("<p><b>" + _e(" · ".join(parts)) + "</b></p>")
    if missing:
        p.append("<h2>Not measured in this run</h2><ul>" + "".join(f"<li>{_e(m)}</li>" for m in missing) + "</ul>")
    if problems:
        p.append("<h2>Skipped files</h2><ul>" + "".join(f"<li><code>{_e(m)}</code></li>" for m in problems) + "</ul>")

    # Runners of the latest run.
    p.append("<h2>Runners of the latest run</h2>")
    rows = []
    for r in latest.records:
        cbw = ", ".join(f"{b['backend']} {b['copy_bandwidth_gbs']:.0f} GB/s" for b in r["bench_runs"]
                        if b["copy_bandwidth_gbs"])
        launch = ", ".join(sorted({b.get("decode_launch") for b in r["bench_runs"]
                                   if b.get("decode_launch")}))
        rows.append([r["runner"], r["shard"] or "-", r["host"], r["gpu"] or "none", r["driver"] or "-",
                     r["cuda_version"] or "-", r["arch_list"] or "-", launch or "-", cbw or "-",
                     r["policy_hash"] or "-",
                     r["date"], os.path.basename(r["_file"])])
    p.append(_table(["runner", "shard", "host", "GPU", "driver", "CUDA", "archs", "decode launch",
                     "copy bandwidth",
                     "policy hash", "date", "record"], rows))
    if latest.duplicates:
        p.append("<p class='warn'>Rows present in two records of this run (the first kept): "
                 + _e("; ".join(latest.duplicates[:10])) + "</p>")

    # Regressions.
    p.append("<h2>Regressions</h2>")
    methods = sorted({r["method"] for r in bench_res if r["method"]})
    p.append(f"<p>Rule: two-sided Mann-Whitney U p &lt; {args.alpha} "
             f"({_e(' and '.join(methods) + ' used here' if methods else 'no row tested in this run')}; exact when untied and at most "
             f"{stats.EXACT_MAX_N} samples in all, else normal approximation with tie correction) AND a median at "
             f"least {args.min_effect * 100:.0f} % slower; fewer than {stats.MIN_SAMPLES} samples on a side: "
             f"never flagged. Copy and peer rows are compared but not flagged.</p>")
    if perf:
        row_plots = plots.get("row_plots", {})

        def trend(r):
            png = row_plots.get(r["key"])
            return _link("#" + _anchor(png), r["row"]["name"]) if png else r["row"]["name"]
        p.append(_table(["backend", "benchmark (its trend)", "baseline median us", "latest median us", "change",
                         "p (Mann-Whitney U)", "n base/new"],
                        [[r["row"]["backend"], trend(r), _fmt(r["median_base"]), _fmt(r["median_new"]),
                          _fmt(r["effect"] * 100, "{:+.1f}%"), f"{r['p']:.2g} ({r['method']})",
                          f"{r['n_base']}/{r['n_new']}"] for r in perf], ["bad"] * len(perf)))
    if gold:
        p.append(golden_case_table(golden_by_case(gold), limit=20, out_dir=args.out))
    if not perf and not gold:
        p.append("<p>Nothing flagged.</p>")
    else:
        cmds, why = recipe
        if cmds:
            p.append("<p>Pin it to a commit (reports/BISECT.md; the golden cases that passed at the baseline "
                     "first, else the row that slowed down most):</p><pre>" + _e("\n".join(cmds)) + "</pre>")
        if why:
            p.append(f"<p class='warn'>{_e('Bisect: ' + why)}.</p>")
        if getattr(args, "first_bad", None):
            p.append(f"<div class='verdict bad'>First bad commit (ci/nightly --bisect ran it): "
                     f"{_e(args.first_bad)}</div>")

    # The issues' speed targets.
    p.append("<h2>Speed targets (latest run)</h2>")
    target_lines, targets_error = checked
    if targets_error:
        p.append(f"<p class='warn'>Targets not checked: {_e(targets_error)}</p>")
    elif target_lines:
        p.append(f"<p>{_e(vgtargets.summary(target_lines))}. A target is a goal an issue set for the "
                 "kernels (<code>reports/targets.json</code>). A line is met when every row it covers has a "
                 "value that meets it and the run has every row the nightly bench writes; partly measured "
                 "when the rows it has meet it but some are missing or have no value. The last column is the "
                 "fraction of copy a plain streaming read of the same bytes reaches, launched as the kernel "
                 "is (after the previous layer, <code>ceil</code> in the bench); where a bandwidth target "
                 "is above it, the rows that miss both are counted, since that gap is the memory "
                 "system's, not the kernel's. Targets do not decide the verdict above: regressions do.</p>")
        rows, cls = [], []
        # Not-measured lines say nothing one by one: one line for all of them.
        unmeasured = [ln for ln in target_lines if ln["status"] == "not measured"]
        for ln in target_lines:
            if ln["status"] == "not measured":
                continue
            spec, gaps = vgtargets.value_spec(ln), vgtargets.gaps(ln)
            rows.append([ln["source"], ln["text"], ln["group"] or "-", ln["status"],
                         f"{ln['met']}/{ln['rows'] - ln['unmeasured']}" + (f" ({'; '.join(gaps)})" if gaps else ""),
                         _fmt(ln["worst"], spec), spec.format(ln["min"]), ln["worst_row"] or "-",
                         _fmt(ln["worst_ceiling"], "{:.3f}"),
                         (vgtargets.reach_text(ln) or "-") +
                         (f" (under the target at {ln['over_ceiling']} rows)" if ln.get("over_ceiling") else "")])
            cls.append({"met": "good", "not met": "bad"}.get(ln["status"], "warn"))
        if rows:
            p.append(_table(["issue", "target", "line", "status", "rows met", "worst", "needs", "worst row",
                             "its ceil fraction", "stream ceiling reads"], rows, cls))
        if unmeasured:
            by_source = {}
            for ln in unmeasured:
                by_source[ln["source"]] = by_source.get(ln["source"], 0) + 1
            p.append(f"<p class='warn'>Not measured in this run: {len(unmeasured)} target line(s) ("
                     + _e(", ".join(f"{src}: {n}" for src, n in by_source.items()))
                     + "); this run has no row with a value for them (a CPU-only run, a bench without peers, "
                     "a family not benched).</p>")
    else:
        p.append("<p class='muted'>No targets checked (--targets none).</p>")

    # Loop vs grouped.
    lvg = loop_vs_grouped(latest)
    p.append("<h2>Loop vs grouped (latest run)</h2>")
    if lvg:
        p.append(_table(["backend", "benchmark", "tokens", "loop us", "grouped us", "ratio (loop/grouped)",
                         "bandwidth fraction (grouped)", "stream ceiling fraction (grouped)", "max rel RMS"],
                        [[r["backend"], r["variant"], r["tokens"], _fmt(r["loop_us"]), _fmt(r["grouped_us"]),
                          _fmt(r["ratio"], "{:.2f}"), _fmt(r["bw"], "{:.3f}"), _fmt(r["ceil"], "{:.3f}"),
                          _fmt(r["rel_rms"], "{:.2e}")]
                         for r in lvg]))
        p.append("<p class='muted'>Stream ceiling fraction: the time a plain streaming kernel takes for the same "
                 "weight bytes when, like every GEMM layer, it waits for the kernel before it, over the row's "
                 "time (CUDA only; README, voltgate bench).</p>")
    else:
        p.append("<p class='muted'>No loop and grouped rows of the same benchmark in this run.</p>")

    # The tuner's picks against the heuristic's.
    tvh = tuner_vs_heuristic(latest)
    p.append("<h2>Tuner vs heuristic (latest run)</h2>")
    if tvh:
        slower = sum(r["mark"] == "slower" for r in tvh)
        faster = sum(r["mark"] == "faster" for r in tvh)
        p.append(f"<p>{len(tvh)} row(s) where tuning (tune=on) picked another plan than the heuristic "
                 f"(tune=off): the pick ran more than 10 % slower in {slower}, more than 10 % faster in "
                 f"{faster}. The tuner times each candidate alone; the bench times layers back to back, "
                 "as a serving engine runs them.</p>")
        p.append(_table(["backend", "benchmark", "heuristic plan", "heuristic us", "tuned plan", "decision",
                         "tuned us", "tuned vs heuristic"],
                        [[r["backend"], r["variant"], r["heuristic_plan"], _fmt(r["heuristic_us"]), r["tuned_plan"],
                          r["decision"], _fmt(r["tuned_us"]), _fmt(r["loss"] * 100, "{:+.1f}%")] for r in tvh],
                        [{"slower": "bad", "faster": "good"}.get(r["mark"], "") for r in tvh]))
    else:
        p.append("<p class='muted'>No row where tuning picked another plan than the heuristic "
                 "(or no tune=on/off pairs in this run).</p>")

    # All benchmark rows against the baseline.
    p.append("<h2>Benchmarks against the baseline</h2>")
    if bench_res:
        rows, cls = [], []
        for r in bench_res:
            row = r["row"]
            rows.append([row["backend"], row["name"], row["kind"], row["plan"] or "-", row["decision"],
                         _fmt(r["median_base"]), _fmt(row["median_us"]),
                         f"{_fmt(row['min_us'])} - {_fmt(row['max_us'])}",
                         _fmt(r["effect"] * 100 if r["effect"] is not None else None, "{:+.1f}%"),
                         _fmt(r["p"], "{:.2g}"), f"{r['n_base']}/{r['n_new']}",
                         _fmt(row["bandwidth_fraction"], "{:.3f}"), _fmt(row.get("ceiling_fraction"), "{:.3f}"),
                         r["verdict"] + ("; OUTPUT CHECK FAILED" if row.get("output_ok") is False else "")])
            cls.append("bad" if row.get("output_ok") is False else
                       {"regressed": "bad", "improved": "good", "too few samples": "warn"}.get(r["verdict"], ""))
        p.append(_table(["backend", "benchmark", "kind", "plan", "decision", "baseline median us", "median us",
                         "min - max us", "change", "p", "n base/new", "bw fraction", "ceil fraction", "verdict"],
                        rows, cls))
    else:
        p.append("<p class='muted'>No benchmark rows in the latest run.</p>")

    def images(titles, wide=False):
        if plot_note:
            return f"<p class='muted'>{_e(plot_note)}</p>"
        if not titles:
            return ("<p class='muted'>Nothing to plot" + (": not measured in this run (see the top of the page)"
                                                          if missing else "") + ".</p>")
        imgs = "".join(f"<img id='{_anchor(png)}' src='{_e(png)}' alt='{_e(t)}' class='{'wide' if wide else ''}'>"
                       for t, png in titles)
        return imgs if wide else f"<div class='grid'>{imgs}</div>"

    p.append("<h2>Bandwidth fraction per path and family</h2>" + images(plots["bandwidth"], wide=True))
    p.append("<h2>Golden error against tolerance</h2>" + images(plots["golden"], wide=True))
    if golden_res:
        bad = [g for g in golden_res if g["row"]["verdict"] != "PASS" or g["transition"] == "FAIL->PASS"]
        n_pass = sum(1 for g in golden_res if g["row"]["verdict"] == "PASS")
        p.append(f"<p>{n_pass} of {len(golden_res)} golden rows pass.</p>")
        if bad:
            cases = golden_by_case(bad)
            p.append(f"<details><summary>{len(cases)} failing or recovered case(s)</summary>"
                     + golden_case_table(cases, limit=500, out_dir=args.out) + "</details>")
    else:
        p.append("<p class='muted'>No golden rows in the latest run.</p>")

    p.append("<h2>Replay: shapes measured during serving</h2>")
    reps = latest.replays()
    if not reps and plots["replay"]:
        p.append("<p class='muted'>The latest run has no replay; the plot shows earlier runs.</p>")
    if reps:
        rows = [[runner, rp["requests"], rp["requests_with_new_shape"], rp["warmup_measured"],
                 rp["serving_measured"]] for runner, rp in reps]
        p.append(_table(["runner", "requests", "with a new shape", "measured in warm-up",
                         "measured during serving"], rows,
                        ["bad" if rp["serving_measured"] else "good" for _, rp in reps]))
    p.append(images(plots["replay"], wide=True))

    cov = latest.coverage()
    if cov or plots["coverage"]:
        p.append("<h2>Coverage</h2>")
        if cov:
            p.append(f"<p>lines {_fmt(cov['line_percent'], '{:.1f}')} % ({cov['lines_covered']}/"
                     f"{cov['lines_valid']}), branches {_fmt(cov['branch_percent'], '{:.1f}')} % "
                     f"({cov['branches_covered']}/{cov['branches_valid']})</p>")
            if cov["files"]:
                files = sorted(cov["files"], key=lambda f: (f.get("line_percent") or 0))
                p.append("<details><summary>per file (lowest first)</summary>" +
                         _table(["file", "line %", "branch %"],
                                [[f.get("file", "?"), _fmt(f.get("line_percent"), "{:.1f}"),
                                  _fmt(f.get("branch_percent"), "{:.1f}")] for f in files]) + "</details>")
        p.append(images(plots["coverage"]))

    model = latest.v100_model()
    if model:
        p.append(v100_model_section(model))

    p.append("<h2>Each benchmark over commits</h2>")
    if len(runs) > 1:
        p.append("<p class='muted'>Line: median; band: min to max of the samples of each run; "
                 "red ring: a regressed row's latest point.</p>")
        p.append(images(plots["history"]))
    else:
        p.append("<p class='muted'>One run in the history: trends start with the second.</p>")
    p.append("<h2>Runs in the history</h2>")
    p.append(_table(["run", "commit", "date", "records", "bench rows", "golden rows"],
                    [[i + 1, r.label, r.date, len(r.records), len(r.bench), len(r.golden)]
                     for i, r in enumerate(runs)]))
    p.append("</body></html>")
    return "\n".join(p)


def write_report(runs, latest, baseline, args, problems, target_list=(), targets_error=None):
    """Writes the page; returns (index, bench_res, golden_res, perf, gold,
    written, target lines, bisect recipe)."""
    os.makedirs(args.out, exist_ok=True)
    for name in os.listdir(args.out):            # plots of an earlier report
        if name.endswith(".png") and re.match(r"^(history|bandwidth|golden|replay|coverage)", name):
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
        plots = dict.fromkeys(("history", "bandwidth", "golden", "replay", "coverage"), [])
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
                 "coverage": plot_coverage(runs, args.out, written)}
    page = render_page(runs, latest, baseline, bench_res, golden_res, perf, gold, plots, problems, args,
                       (target_lines, targets_error), recipe, plot_note)
    fd, tmp = tempfile.mkstemp(prefix=".index-", suffix=".html", dir=args.out)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(page)
    os.chmod(tmp, 0o644)
    index = os.path.join(args.out, "index.html")
    os.replace(tmp, index)
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
    if not 0 < args.alpha < 1 or args.min_effect < 0:
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
    index, bench_res, golden_res, perf, gold, _, target_lines, recipe = write_report(
        runs, latest, baseline, args, problems, target_list, targets_error)
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
    if perf or gold:
        print(markdown_table(perf, gold))
        cmds, why = recipe
        if cmds:
            print("\nTo pin it to a commit (reports/BISECT.md):\n" + "\n".join("    " + c for c in cmds))
        if why:
            print(f"\nBisect: {why}.")
        return 1
    if baseline is not None and not rows_compared(bench_res, golden_res):
        # A nightly must not go green by comparing nothing.
        print(nothing_compared_text(latest, baseline))
        return 2
    print("no regression")
    return 0


if __name__ == "__main__":
    sys.exit(main())
