"""Speed targets: the goals the issues set for the kernels, checked against
the bench rows of one run.

A target is data (reports/targets.json), not code: which rows it covers (a
backend, a regular expression over the row name, a token range), the value
it reads from each row and the least value that meets it.  Values:

  bandwidth_fraction   the row's weight bytes / median time / copy bandwidth
  ceiling_fraction     the stream ceiling's time over the row's (CUDA only)
  speedup              partner median / row median, where the partner is the
                       row named by re.sub(over.pattern, over.repl, name):
                       a cuBLAS peer, the same layer on another path, or
                       the same layer in another family
  speedup_over_fastest the fastest partner's median / row median, where the
                       partners are the rows whose whole name matches
                       re.sub(over.pattern, over.repl, name) read as a
                       regular expression (the parts of the name that the
                       pattern's groups carry into it are escaped): the
                       tuned row against the fastest plan of every kind,
                       .../tune=on against .../kind=.+ (under 1: the tuned
                       choice is slower than the best plan).  Where the
                       row's plan is the fastest partner's plan it reads
                       1.0 (tuned_over_fastest): the same kernels timed at
                       two moments of one run differ by the machine's
                       drift, not by the choice (H100, M=8192: one plan
                       read 373.9 and 424.9 us in one crossover run)
  v100_ceiling         the V100 model's ceiling of a kernel (sass_model.py;
                       the record's v100_model): rows of backend
                       "v100-model" named TILE/FAMILY, e.g.
                       decode.m8n16w4.u2/awq (model_rows below)

The name pattern's named groups that "by" lists split a target into lines
(one per family, one per shape, ...); "alias" maps a group's value to
another's line ({"shape": {"prefill4096": "n4096k4096"}}: the crossover's
M=N=K=4096 row runs under prefill4096's name and belongs to the N=K=4096
line).  "expect" lists what a whole run has:
the values of each "by" group (so that a family the run lacks gets its own
line) and the token counts of each line.  A line is

  met              every row has a value that meets it, and no expected
                   row is missing
  not met          some row's value is under it
  partly measured  the rows that have a value meet it, but some rows have
                   none, or some expected token counts are missing
  not measured     no row has a value (a CPU-only run, a bench without
                   peers, a family not benched)

A value of zero or less is no measurement (the bench writes a bandwidth
fraction of 0 when its copy probe failed).

A bandwidth target's line also says what the stream ceiling reads: a CUDA
row's bandwidth fraction over its ceiling fraction is the fraction of copy
that a plain streaming read of the same bytes reaches, launched as the
kernel is (it waits for the previous layer, then reads; bench_peer.cu).
Where a row misses the target and that read misses it too, no kernel of
this design has been measured to meet it: the line says at how many rows,
so a reader can tell a kernel's gap from a target above what the memory
system gives a kernel that must wait (kernels/cuda/KERNELS.md D25).
Overlap with the previous layer lets a kernel pass its ceiling by a few
per cent (fp8 up to 1.09), so this is a flag, not a status.

Targets are goals, not the regression gate: report.py shows them on the
page and prints one summary line, and its exit status does not change.

    targets.py [--targets FILE] BENCH.json...

checks the rows of `voltgate bench --json` files without a history (a GPU
call that benched and wants the verdicts in its summary): one line per
target and group, then the summary.  Exit 0 (the targets are goals), 2 on
a file that does not read.
"""
import argparse
import json
import os
import re
import sys

DEFAULT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets.json")
VALUES = ("bandwidth_fraction", "ceiling_fraction", "speedup", "speedup_over_fastest", "v100_ceiling")
PARTNER_VALUES = ("speedup", "speedup_over_fastest")
MODEL_BACKEND = "v100-model"


def _fail(path, msg):
    raise ValueError(f"{path}: {msg}")


def load_targets(path=DEFAULT_FILE):
    """The list of targets in path, checked; ValueError names what is wrong."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as exc:
        _fail(path, f"cannot read: {exc.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        _fail(path, f"not valid JSON: {exc}")
    if not isinstance(doc, dict) or not isinstance(doc.get("targets"), list):
        _fail(path, 'expected an object with a "targets" list')
    out, ids = [], set()
    for i, t in enumerate(doc["targets"]):
        where = f"target {i + 1}"
        if not isinstance(t, dict):
            _fail(path, f"{where} is not an object")
        for key, kind in (("id", str), ("source", str), ("text", str), ("backend", str), ("name", str),
                          ("value", str)):
            if not isinstance(t.get(key), kind) or not t[key]:
                _fail(path, f'{where}: "{key}" must be a non-empty string')
        where = f'target "{t["id"]}"'
        if t["id"] in ids:
            _fail(path, f"{where} is given twice")
        ids.add(t["id"])
        if isinstance(t.get("min"), bool) or not isinstance(t.get("min"), (int, float)) or t["min"] <= 0:
            _fail(path, f'{where}: "min" must be a positive number')
        if t["value"] not in VALUES:
            _fail(path, f'{where}: "value" must be one of {", ".join(VALUES)}, not "{t["value"]}"')
        try:
            name_re = re.compile(t["name"])
        except re.error as exc:
            _fail(path, f'{where}: "name" is not a regular expression: {exc}')
        tokens = t.get("tokens", [1, 1 << 30])
        if (not isinstance(tokens, list) or len(tokens) != 2 or
                not all(isinstance(v, int) and not isinstance(v, bool) for v in tokens) or tokens[0] > tokens[1]):
            _fail(path, f'{where}: "tokens" must be [least, most] integers')
        by = t.get("by", [])
        if not isinstance(by, list) or any(b not in name_re.groupindex for b in by):
            _fail(path, f'{where}: every "by" entry must be a named group of "name" '
                        f'(has: {", ".join(name_re.groupindex) or "none"})')
        expect = t.get("expect", {})
        if not isinstance(expect, dict) or any(
                (k != "tokens" and k not in by) or not isinstance(v, list) or not v for k, v in expect.items()):
            _fail(path, f'{where}: "expect" maps "tokens" or a "by" group to a non-empty list')
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in expect.get("tokens", [])):
            _fail(path, f'{where}: "expect.tokens" must list integers')
        if not all(isinstance(v, str) for k, vs in expect.items() if k != "tokens" for v in vs):
            _fail(path, f'{where}: "expect" lists a "by" group\'s values as strings')
        alias = t.get("alias", {})
        if not isinstance(alias, dict) or any(
                g not in by or not isinstance(m, dict) or
                not all(isinstance(k, str) and isinstance(v, str) for k, v in m.items())
                for g, m in alias.items()):
            _fail(path, f'{where}: "alias" maps a "by" group to {{value: value}} strings')
        over = None
        if t["value"] in PARTNER_VALUES:
            o = t.get("over")
            if not isinstance(o, dict) or not all(isinstance(o.get(k), str) for k in ("pattern", "repl")):
                _fail(path, f'{where}: a {t["value"]} needs "over": {{"pattern": ..., "repl": ...}}')
            try:
                over = (re.compile(o["pattern"]), o["repl"])
            except re.error as exc:
                _fail(path, f'{where}: "over.pattern" is not a regular expression: {exc}')
        elif "over" in t:
            _fail(path, f'{where}: "over" belongs to a speedup only')
        if t["value"] == "speedup_over_fastest":
            try:
                re.compile(re.sub(r"\\[0-9]+", "", over[1]))
            except re.error as exc:
                _fail(path, f'{where}: "over.repl" does not make a regular expression: {exc}')
            if any(int(g) > over[0].groups for g in re.findall(r"\\([0-9]+)", over[1])):
                _fail(path, f'{where}: "over.repl" names a group "over.pattern" does not have')
        if t["value"] == "speedup":
            try:
                # the replacement's escapes and group numbers, on a match of
                # the same groups that any name gives (the pattern made optional)
                re.compile(f"(?:{over[0].pattern})?").match("").expand(over[1])
            except re.error as exc:
                _fail(path, f'{where}: "over.repl" is not a replacement for "over.pattern": {exc}')
        out.append({"id": t["id"], "source": t["source"], "text": t["text"], "backend": t["backend"],
                    "name_re": name_re, "tokens": tokens, "by": by, "value": t["value"],
                    "min": float(t["min"]), "over": over, "expect": expect, "alias": alias})
    return out


def _partner_regex(over, name):
    """The regular expression of a speedup_over_fastest target's partners
    of row `name`: re.sub(pattern, repl, name), with what the pattern's
    groups carry (\\1 ...) escaped, so a '+' or '.' of a name stays itself."""
    pattern, repl = over
    return pattern.sub(lambda m: re.sub(r"\\([0-9]+)", lambda g: re.escape(m.group(int(g.group(1))) or ""),
                                        repl), name)


def tuned_over_fastest(tuned_us, tuned_plan, fastest_us, fastest_plan):
    """The tuned choice's time over the fastest plan's, 1.0 where the two
    are one plan (module docstring: speedup_over_fastest)."""
    if tuned_plan and tuned_plan == fastest_plan:
        return 1.0
    return tuned_us / fastest_us


def _row_value(target, name, row, rows):
    """(value, partner name); value None when the row (or its partner) has none."""
    if target["value"] == "speedup_over_fastest":
        partner_re = re.compile(_partner_regex(target["over"], name))
        partners = [(r["median_us"], n) for n, r in rows.items()
                    if n != name and r.get("median_us") and partner_re.fullmatch(n)]
        if not partners or not row.get("median_us"):
            return None, None
        fastest, partner_name = min(partners)
        ratio = tuned_over_fastest(row["median_us"], row.get("plan"), fastest, rows[partner_name].get("plan"))
        return 1.0 / ratio, partner_name
    if target["value"] != "speedup":
        value = row.get(target["value"])
        return (value if value is not None and value > 0 else None), None
    pattern, repl = target["over"]
    partner_name = pattern.sub(repl, name)
    partner = rows.get(partner_name)
    # A record of several bench files (one per family) holds a peer row per
    # file; the first keeps the plain name, the others are "NAME [stem]"
    # (record.py).  The row's own file's peer, timed in the same run, where
    # there is one: peers of the same shape read 170-182 us at M=4096 across
    # four family runs of one H100 session.
    src = row.get("source")
    if src and (partner is None or partner.get("source") != src):
        own = rows.get(f"{partner_name} [{os.path.splitext(src)[0]}]")
        if own is not None and own.get("source") == src:
            partner = own
    if partner_name == name or partner is None or not partner.get("median_us") or not row.get("median_us"):
        return None, partner_name
    return partner["median_us"] / row["median_us"], partner_name


def _label(target, values):
    return " ".join(f"{b}={v}" for b, v in zip(target["by"], values))


def evaluate(targets, bench):
    """One line per (target, group): bench is {(backend, name): row} of one
    run.  A line: id, source, text, group (a label), value, min, status
    (module docstring), rows (how many), met (how many), unmeasured (rows
    without a value), missing_tokens (expected token counts without a row),
    worst (the lowest value, or None), worst_row (its name), worst_ceiling
    (that row's ceiling fraction), reach (the lowest and highest fraction of
    copy the stream ceiling reads at the line's rows, or None) and
    over_ceiling (rows under the target whose stream ceiling reads under it
    too; both only for a bandwidth target)."""
    lines = []
    for t in targets:
        by_backend = {name: row for (backend, name), row in bench.items() if backend == t["backend"]}
        groups = {}
        for name, row in by_backend.items():
            m = t["name_re"].search(name)
            if not m or row.get("kind") != "kernel" or not t["tokens"][0] <= row.get("tokens", 0) <= t["tokens"][1]:
                continue
            value, _ = _row_value(t, name, row, by_backend)
            # an optional group that did not take part reads as "" (a label, and sortable)
            key = tuple(t["alias"].get(b, {}).get(m.group(b) or "", m.group(b) or "") for b in t["by"])
            groups.setdefault(key, []).append((value, name, row))
        # The lines a whole run has: every combination of the expected values
        # (a "by" group without a list takes the values found).
        axes = [t["expect"].get(b) or sorted({k[i] for k in groups}) for i, b in enumerate(t["by"])]
        keys = [()]
        for axis in axes:
            keys = [k + (v,) for k in keys for v in axis]
        for key in sorted(set(keys) | set(groups)) or [()]:
            found = groups.get(key, [])
            got = [(v, n, r) for v, n, r in found if v is not None]
            worst = min(got, key=lambda g: g[0]) if got else None
            met = sum(1 for v, _, _ in got if v >= t["min"])
            seen = {r.get("tokens") for _, _, r in found}
            missing = sorted(set(t["expect"].get("tokens", [])) - seen)
            reach = {n: _ceiling_reach(r) for v, n, r in got} if t["value"] == "bandwidth_fraction" else {}
            reached = [x for x in reach.values() if x is not None]
            over_ceiling = sum(1 for v, n, _ in got
                               if v < t["min"] and reach.get(n) is not None and reach[n] < t["min"])
            if not got:
                status = "not measured"
            elif met < len(got):
                status = "not met"
            elif len(got) < len(found) or missing:
                status = "partly measured"
            else:
                status = "met"
            lines.append({"id": t["id"], "source": t["source"], "text": t["text"], "group": _label(t, key),
                          "value": t["value"], "min": t["min"], "status": status,
                          "rows": len(found), "met": met, "unmeasured": len(found) - len(got),
                          "missing_tokens": missing,
                          "worst": worst[0] if worst else None, "worst_row": worst[1] if worst else None,
                          "worst_ceiling": worst[2].get("ceiling_fraction") if worst else None,
                          "reach": (min(reached), max(reached)) if reached else None,
                          "over_ceiling": over_ceiling})
    return lines


def lowest_per_tile(v100_model):
    """{(tile, family): the model row} of the record's v100_model, keeping
    the lower ceiling where two kernels share a tile and family (mxfp4 and
    nvfp4 have a byte-wise and a word-wise scale loader); a row without a
    ceiling gives way to one with."""
    out = {}
    for r in v100_model or ():
        key = (r["tile"], r["family"])
        old = out.get(key)
        if old is None or (r.get("ceiling") is not None and
                           (old.get("ceiling") is None or r["ceiling"] < old["ceiling"])):
            out[key] = r
    return out


def model_rows(v100_model):
    """The V100 model's rows as rows a target reads: {("v100-model",
    "TILE/FAMILY"): row}, one per tile and family (lowest_per_tile)."""
    return {(MODEL_BACKEND, f"{tile}/{fam}"): {"kind": "kernel", "tokens": 1, "v100_ceiling": r.get("ceiling"),
                                                "bound": r.get("bound")}
            for (tile, fam), r in lowest_per_tile(v100_model).items()}


def _ceiling_reach(row):
    """The fraction of copy the row's stream ceiling reads (bandwidth
    fraction over ceiling fraction), or None without both."""
    bw, ceil = row.get("bandwidth_fraction"), row.get("ceiling_fraction")
    return bw / ceil if bw and ceil and bw > 0 and ceil > 0 else None


def summary(lines):
    """'targets: 3 met, 5 not met, 0 partly measured, 1 not measured', and
    how many lines ask more than the stream ceiling reads, when any do."""
    counts = {s: sum(1 for ln in lines if ln["status"] == s)
              for s in ("met", "not met", "partly measured", "not measured")}
    over = sum(1 for ln in lines if ln.get("over_ceiling"))
    return "targets: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + \
        (f"; {over} not met where the stream ceiling itself reads under the target" if over else "")


def reach_text(ln):
    """'0.609' or '0.609-0.741', the stream ceiling's fraction of copy at a
    line's rows; '' when it has none."""
    if not ln.get("reach"):
        return ""
    lo, hi = ln["reach"]
    return f"{lo:.3f}" if f"{lo:.3f}" == f"{hi:.3f}" else f"{lo:.3f}-{hi:.3f}"


def value_spec(ln):
    """The format of a line's values: a speedup as 1.80x, a fraction as 0.750."""
    return "{:.2f}x" if ln["value"] in PARTNER_VALUES else "{:.3f}"


def gaps(ln):
    """What a line lacks, as phrases ("2 without a value", "no row at tokens 8")."""
    return ([f"{ln['unmeasured']} without a value"] if ln["unmeasured"] else []) + \
        ([f"no row at tokens {','.join(map(str, ln['missing_tokens']))}"] if ln["missing_tokens"] else [])


def format_line(ln):
    spec = value_spec(ln)
    worst = "-" if ln["worst"] is None else spec.format(ln["worst"])
    where = f" at {ln['worst_row']}" if ln["worst_row"] else ""
    ceil = "" if ln["worst_ceiling"] is None else f" (ceil {ln['worst_ceiling']:.3f})"
    short = "".join(", " + g for g in gaps(ln))
    over = (f"; at {ln['over_ceiling']} of its rows the stream ceiling itself reads under it "
            f"({reach_text(ln)} of copy)") if ln.get("over_ceiling") else ""
    return (f"{ln['status']:>15}  {ln['id']} {ln['group'] or ''}: {ln['met']}/{ln['rows'] - ln['unmeasured']} "
            f"rows{short}, worst {worst}{where}{ceil}, needs {spec.format(ln['min'])}{over}")


def main(argv=None):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import record as vgrecord
    ap = argparse.ArgumentParser(description="check voltgate bench JSON files against the speed targets")
    ap.add_argument("--targets", metavar="FILE", default=DEFAULT_FILE, help="default: reports/targets.json")
    ap.add_argument("--sass-model", metavar="F", help="reports/sass_model.py --json output (the V100 targets)")
    ap.add_argument("bench", nargs="*", metavar="BENCH.json", help="voltgate bench --json output")
    args = ap.parse_args(argv)
    if not args.bench and not args.sass_model:
        ap.error("give bench JSON files, --sass-model, or both")
    try:
        target_list = load_targets(args.targets)
        model = (args.sass_model, vgrecord.read_json(args.sass_model)) if args.sass_model else None
        rec = vgrecord.build_record(bench=[(p, vgrecord.read_json(p)) for p in args.bench], sass_model=model,
                                    warn=lambda m: sys.stderr.write(f"targets.py: {m}\n"))
    except (ValueError, vgrecord.InputError) as exc:
        print(f"targets.py: {exc}", file=sys.stderr)
        return 2
    rows = {(r["backend"], r["name"]): r for r in rec["bench"]}
    rows.update(model_rows(rec["v100_model"]))
    lines = evaluate(target_list, rows)
    for ln in lines:
        print(format_line(ln))
    print(summary(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
