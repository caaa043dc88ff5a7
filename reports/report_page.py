"""The report's HTML page: its tables, sections and the page itself.
"""
import html
import os
import re

import stats
import targets as vgtargets
import v100_crossover
from report_plots import CROSSOVER_PEER, CROSSOVER_TUNED, crossover_series
from report_runs import _natural, _slug
from report_rule import (
    _worst, golden_by_case, nothing_compared_text, reproduce_command, rows_compared,
)


# ---- the page ----------------------------------------------------------------------------------

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
    (kernels/cuda/KERNELS.md D17), not the expected disagreement of
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


def crossover_table(run):
    """Rows of the crossover table, one per (backend, family, shape, M) of
    crossover_series: the tuned choice, the fastest plan of any kind, the
    tuned time over it (1.0 where the tuned choice is that plan:
    targets.tuned_over_fastest), cuBLAS BF16 and the tuned choice's speedup
    over it."""
    out = []
    for (backend, family), shapes in sorted(crossover_series(run).items()):
        for shape in sorted(shapes, key=_natural):
            lines = {line: {m: (us, plan) for m, us, plan in pts} for line, pts in shapes[shape].items()}
            tuned, peer = lines.get(CROSSOVER_TUNED, {}), lines.get(CROSSOVER_PEER, {})
            kinds = {line[len("kind="):]: pts for line, pts in lines.items() if line.startswith("kind=")}
            for m in sorted({m for pts in kinds.values() for m in pts}):
                best = min(((pts[m][0], kind, pts[m][1]) for kind, pts in kinds.items() if m in pts), default=None)
                t_us, t_plan = tuned.get(m, (None, None))
                p_us = peer.get(m, (None, None))[0]
                out.append({"backend": backend, "family": family, "shape": shape, "m": m,
                            "tuned_us": t_us, "tuned_plan": t_plan,
                            "best_us": best[0] if best else None, "best_kind": best[1] if best else None,
                            "best_plan": best[2] if best else None,
                            "tuned_over_best": (vgtargets.tuned_over_fastest(t_us, t_plan, best[0], best[2])
                                                if t_us and best else None),
                            "peer_us": p_us, "speedup": p_us / t_us if p_us and t_us else None})
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


def v100_ceiling_lookup(model_rows):
    """plan id, family -> the V100 model's ceiling of the kernel that plan
    runs, or None.  A plan id (cuda.<path>.<tier>.<tile>.sk<N>) and the
    model's tile (<kind>.<tile>) share the tile part; the tier word does not
    always agree (a 64x64x64 tile is 'mid' on grouped, 'prefill' on dense),
    and split-K runs the same kernel (one row per tile: lowest_per_tile)."""
    best = {(tile.split(".", 1)[-1], fam): r["ceiling"]
            for (tile, fam), r in vgtargets.lowest_per_tile(model_rows).items() if r.get("ceiling") is not None}

    def lookup(plan, family):
        if not plan or not plan.startswith("cuda.") or plan.count(".") < 4:
            return None
        tile = ".".join(plan.split(".")[3:])
        tile = re.sub(r"\.sk[0-9]+$", "", tile)
        return best.get((tile, family))
    return lookup


def v100_model_section(rows):
    """The V100 ceiling (model) table: one row per plan tile, a column per
    family, each cell the ceiling and the binding pipe."""
    fams = sorted({r["family"] for r in rows}, key=_natural)
    tiles = sorted({(r["kind"], r["tile"]) for r in rows}, key=lambda t: (t[0], _natural(t[1])))
    cell = vgtargets.lowest_per_tile(rows)
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
            notes = [r["bound"]] + ([f"{r['shfl']} SHFL"] if r["shfl"] else []) + \
                ([f"{r['memory_waits_per_iter']} mem waits"] if r.get("memory_waits_per_iter") else [])
            line.append(f"{100 * r['ceiling']:.0f} % ({', '.join(notes)})")
        body.append(line)
        classes.append("good" if worst >= 0.9 else "bad" if worst < 0.5 else "")
    return ("<h2>V100 ceiling (model)</h2><p class='muted'>From the sm_70 SASS of each kernel's hot loop "
            "(reports/sass_model.py): the fraction of V100 DRAM bandwidth (decode) or tensor peak (tiled) "
            "its instructions allow, and the pipe that binds; mem waits: the memory latencies one pass over "
            "its hot loop waits for (only other warps cover them). An upper bound, not a measurement: no V100 "
            "ran.</p>" + _table(["plan tile"] + [f"{f} (V100 ceiling, model)" for f in fams], body, classes))


def v100_crossover_section(rows):
    """The V100 crossover (model) section: per family, the crossover shapes'
    M rows with each plan kind's lower-bound time, cuBLAS FP16 and the SM70
    rule's pick (reports/v100_crossover.py).  Empty without model rows; one
    muted line where the rows cannot be read."""
    if not rows:
        return ""
    head = ("<h2>V100 crossover (model)</h2><p class='muted'>Modelled, not measured: a V100's time (us) for "
            "each plan kind's best plan at the crossover shapes, from the V100 ceilings above; the native plans' "
            "times are lower bounds, the cuBLAS and dequantize + cuBLAS ones estimates (assumed efficiency). "
            "A marked row: the SM70 rule's pick (tuning off) is modelled more than "
            f"{v100_crossover.FLAG_RATIO:.2f} x the best; a gap of 10-20 % is within the model's error.</p>")
    try:
        setting = v100_crossover.setting()
        results = v100_crossover.crossover(rows)
    except v100_crossover.ModelError as e:
        return head + f"<p class='muted'>Not drawn: {_e(e)}</p>"
    out = [head]
    for family in v100_crossover.FAMILIES:
        rs = [r for r in results if r["family"] == family]
        flagged = sum(r["flag"] for r in rs)
        out.append(f"<h3>{_e(family)}: {flagged} row(s) where the rule's pick is modelled over "
                   f"{v100_crossover.FLAG_RATIO:.2f} x the best</h3>")
        out.append(_table(v100_crossover.TABLE_HEAD, [v100_crossover.table_cells(r) for r in rs],
                          ["bad" if r["flag"] else "" for r in rs]))
    out.append(f"<p class='muted'>{_e(v100_crossover.assumptions_text(setting))}</p>")
    return "".join(out)


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
    def images(titles, wide=False):
        if plot_note:
            return f"<p class='muted'>{_e(plot_note)}</p>"
        if not titles:
            return ("<p class='muted'>Nothing to plot" + (": not measured in this run (see the top of the page)"
                                                          if missing else "") + ".</p>")
        imgs = "".join(f"<img id='{_anchor(png)}' src='{_e(png)}' alt='{_e(t)}' class='{'wide' if wide else ''}'>"
                       for t, png in titles)
        return imgs if wide else f"<div class='grid'>{imgs}</div>"

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

    # The crossover (issue 31): each plan kind, the tuned choice and cuBLAS against M.
    p.append("<h2>Crossover: time against M per family (latest run)</h2>")
    cross = crossover_table(latest)
    if cross:
        p.append("<p>From <code>voltgate bench --shape crossover</code>: at each M the fastest plan of each "
                 "plan kind the tuner offers there (every plan of the kind timed as the bench times a layer, "
                 "the fastest timed again for its row: <code>.../kind=KIND</code>), the tuned choice "
                 "(<code>tune=on</code>) and cuBLAS BF16 on the dequantized weight, log-log. Issue 31's "
                 "targets on these rows are in the Speed targets table.</p>")
        p.append(images(plots.get("crossover", []), wide=True))
        slow = sum(1 for r in cross if r["tuned_over_best"] and r["tuned_over_best"] > 1.03)
        p.append(f"<details><summary>{len(cross)} crossover row(s); the tuned choice more than 3 % slower "
                 f"than the fastest plan at {slow}</summary>" +
                 _table(["backend", "family", "shape", "M", "tuned us", "tuned plan", "fastest plan us",
                         "its kind", "its plan", "tuned / fastest", "cuBLAS BF16 us", "tuned speedup over cuBLAS"],
                        [[r["backend"], r["family"], r["shape"], r["m"], _fmt(r["tuned_us"]),
                          r["tuned_plan"] or "-", _fmt(r["best_us"]), r["best_kind"] or "-", r["best_plan"] or "-",
                          _fmt(r["tuned_over_best"], "{:.3f}"), _fmt(r["peer_us"]), _fmt(r["speedup"], "{:.2f}x")]
                         for r in cross],
                        ["bad" if r["tuned_over_best"] and r["tuned_over_best"] > 1.03 else "" for r in cross])
                 + "</details>")
    else:
        p.append("<p class='muted'>No crossover rows in this run: <code>voltgate bench --shape crossover</code> "
                 "writes them (runs from before issue 31 have no per-kind rows, so no crossover).</p>")

    # All benchmark rows against the baseline.
    p.append("<h2>Benchmarks against the baseline</h2>")
    if bench_res:
        rows, cls = [], []
        v100 = v100_ceiling_lookup(latest.v100_model())
        for r in bench_res:
            row = r["row"]
            ceil_v100 = v100(row["plan"], row["family"]) if row["backend"] == "cuda" else None
            rows.append([row["backend"], row["name"], row["kind"], row["plan"] or "-", row["decision"],
                         _fmt(r["median_base"]), _fmt(row["median_us"]),
                         f"{_fmt(row['min_us'])} - {_fmt(row['max_us'])}",
                         _fmt(r["effect"] * 100 if r["effect"] is not None else None, "{:+.1f}%"),
                         _fmt(r["p"], "{:.2g}"), f"{r['n_base']}/{r['n_new']}",
                         _fmt(row["bandwidth_fraction"], "{:.3f}"), _fmt(row.get("ceiling_fraction"), "{:.3f}"),
                         _fmt(ceil_v100, "{:.2f}"),
                         r["verdict"] + ("; OUTPUT CHECK FAILED" if row.get("output_ok") is False else "")])
            cls.append("bad" if row.get("output_ok") is False else
                       {"regressed": "bad", "improved": "good", "too few samples": "warn"}.get(r["verdict"], ""))
        p.append(_table(["backend", "benchmark", "kind", "plan", "decision", "baseline median us", "median us",
                         "min - max us", "change", "p", "n base/new", "bw fraction", "ceil fraction",
                         "V100 ceiling (model)", "verdict"],
                        rows, cls))
    else:
        p.append("<p class='muted'>No benchmark rows in the latest run.</p>")

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
        p.append(v100_crossover_section(model))

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
