"""The report's PNG plots (matplotlib, imported only when a plot is drawn).
"""
import os
import re
import sys

from report_runs import _natural, _slug


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


# ---- the crossover (issue 31) ---------------------------------------------------------------

CROSSOVER_TUNED = "tuned choice (tune=on)"
CROSSOVER_PEER = "cuBLAS BF16 (dequantized W)"
_CROSS_KERNEL = re.compile(r"^[^/]+/dense/[^/]+/m([0-9]+)/(kind=(?P<kind>.+)|tune=on)$")
_CROSS_PEER = re.compile(r"^[^/]+/peer-cublas-bf16/m([0-9]+)( \[.*\])?$")


def crossover_series(run):
    """The crossover of the latest run, as data: {(backend, family): {shape:
    {line: [(M, median us, plan), ...] by M}}}, where shape is n<N>k<K> from
    the row's own fields (so prefill4096's M=N=K=4096 row joins n4096k4096)
    and a line is each plan kind's fastest plan ("kind=tiled", from the
    .../kind=KIND rows), CROSSOVER_TUNED (the tune=on row) and CROSSOVER_PEER
    (cuBLAS BF16 at the same shape and M: the one the family's own bench
    file timed, else the run's first).  Only a family with kind rows has a crossover: a run from before
    the kind rows (or without --shape crossover) gives {}."""
    kernels, peers, sources, own_peers = {}, {}, {}, {}
    for (backend, name), row in run.bench.items():
        if row.get("path") != "dense" or not row.get("median_us"):
            continue
        shape = f"n{row['n']}k{row['k']}"
        m = _CROSS_KERNEL.match(name) if row["kind"] == "kernel" else None
        if m:
            line = f"kind={m.group('kind')}" if m.group("kind") else CROSSOVER_TUNED
            kernels.setdefault((backend, row["family"]), {}).setdefault(shape, {}).setdefault(line, {})[
                row["m"]] = (row["m"], row["median_us"], row.get("plan"))
            if row.get("source"):
                sources.setdefault((backend, row["family"]), row["source"])
            continue
        p = _CROSS_PEER.match(name) if row["kind"] == "peer" else None
        # Each family's bench file has its own peer row (a record keeps the
        # first under the plain name, the others "NAME [stem]", record.py):
        # a family takes the one its own file timed, else the plain one.
        if p and row.get("source"):
            own_peers.setdefault((backend, shape, row["source"]), {})[row["m"]] = (
                row["m"], row["median_us"], row.get("plan"))
        if p and (not p.group(2) or row["m"] not in peers.get((backend, shape), {})):
            peers.setdefault((backend, shape), {})[row["m"]] = (row["m"], row["median_us"], row.get("plan"))
    out = {}
    for (backend, family), shapes in kernels.items():
        if not any(line.startswith("kind=") for lines in shapes.values() for line in lines):
            continue
        fam = out.setdefault((backend, family), {})
        for shape, lines in shapes.items():
            if not any(line.startswith("kind=") for line in lines):
                continue
            ms = {m for pts in lines.values() for m in pts}
            series = {line: [pts[m] for m in sorted(pts)] for line, pts in sorted(lines.items())}
            peer = dict(peers.get((backend, shape), {}))
            peer.update(own_peers.get((backend, shape, sources.get((backend, family))), {}))
            if any(m in peer for m in ms):
                series[CROSSOVER_PEER] = [peer[m] for m in sorted(peer) if m in ms]
            fam[shape] = series
    return out


def plot_crossover(run, out_dir, written):
    """One PNG per (backend, family) of crossover_series: median time against
    M, log-log, a panel per shape, a line per plan kind (its fastest plan),
    one for the tuned choice and one for cuBLAS BF16.  Returns [(title, png)]."""
    data = crossover_series(run)
    if not data:
        return []
    plt = _plt()
    out = []
    # The tuned choice is a wide pale band under the kinds' lines: where it
    # follows the fastest kind (as it should) that kind stays visible on it.
    styles = {CROSSOVER_TUNED: dict(color="black", linewidth=5, alpha=0.3, marker="o", zorder=1),
              CROSSOVER_PEER: dict(color="tab:red", linewidth=1.8, linestyle="--", marker="s", zorder=3)}
    markers = "^vD<>"
    for (backend, family), shapes in sorted(data.items()):
        names = sorted(shapes, key=_natural)
        fig, axes = plt.subplots(1, len(names), figsize=(6.2 * len(names), 4.2), squeeze=False)
        for ax, shape in zip(axes[0], names):
            kinds = [ln for ln in shapes[shape] if ln.startswith("kind=")]
            for i, line in enumerate(kinds + [ln for ln in (CROSSOVER_TUNED, CROSSOVER_PEER) if ln in shapes[shape]]):
                pts = shapes[shape][line]
                style = styles.get(line, dict(color=f"C{i}", linewidth=1.4, marker=markers[i % len(markers)],
                                              zorder=2))
                label = line[len("kind="):] + " (fastest plan of the kind)" if line.startswith("kind=") else line
                ax.plot([m for m, _, _ in pts], [us for _, us, _ in pts], markersize=4, label=label, **style)
            ms = sorted({m for pts in shapes[shape].values() for m, _, _ in pts})
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(ms)
            ax.set_xticklabels([str(m) for m in ms], rotation=45 if len(ms) > 6 else 0)
            ax.minorticks_off()
            ax.set_xlabel("M (rows of X)")
            ax.set_ylabel("median us (log)")
            ax.set_title(f"{shape}")
        axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        title = f"{backend} {family}: time against M (crossover)"
        fig.suptitle(title)
        out.append((title, _save(fig, out_dir, f"crossover-{_slug(backend + '-' + family)}.png", written)))
    return out
