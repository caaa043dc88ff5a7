"""The runs of the report: the records of one commit from many runners merged
into one Run, the baseline picked; and the natural order and slugs of names
that every part of the report uses.
"""
import os
import re

import record as vgrecord


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
            name = current_row_name(row["backend"], row["name"])
            if name != row["name"]:
                # A record from before a rename: the row under today's name,
                # so that it compares with (and trends with) today's rows.
                row = dict(row, name=name)
            key = (row["backend"], name)
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


# ---- names: rows renamed since records were written ---------------------------------

# A row's name is the key that compares runs (reports/SCHEMA.md).  When the
# bench renames a row, the records already in a history keep the old name,
# and the first nightly after the rename would find none of the renamed rows
# in its baseline (a CPU --quick nightly then compares its copy row alone,
# and says "no regression").  This table holds the legacy names: (backend,
# old name prefix, current name prefix).  Run.add() files every row under
# its current name, so compare_runs(), the trends and the bisect recipe see
# one row.  ci/bisect-step carries a copy (it runs from outside the tree, at
# commits that print the old name); reports/tests/test_legacy_names.py
# checks that the two agree.
LEGACY_ROW_PREFIXES = (
    # Issue 30: the CPU bench's grouped rows (4 groups x N=256 x K=512) were
    # named after the CUDA shape they stand in for, wo_a (8 x 1024 x 4096);
    # now after their own shape, as the CPU dense rows are (n512k512).  The
    # CPU shape has been 4 x 256 x 512 since the bench was written
    # (f88cfb4), so every old cpu wo_a row is this row.  CUDA rows keep wo_a.
    ("cpu", "wo_a/", "g4n256k512/"),
)


def current_row_name(backend, name):
    """name as today's bench prints the row (backend, name): a legacy name
    (LEGACY_ROW_PREFIXES) becomes the current one, any other is unchanged."""
    for b, old, new in LEGACY_ROW_PREFIXES:
        if backend == b and name.startswith(old):
            return new + name[len(old):]
    return name


# ---- names: natural order and file-safe slugs --------------------------------------

def _natural(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _slug(s):
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()
