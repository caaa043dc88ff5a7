"""Rows renamed since records were written (issue 30): until then the CPU
bench named its grouped rows (4 groups x N=256 x K=512) `wo_a/...`, the CUDA
shape's name; now `g4n256k512/...`.  Histories hold records with the old
names: the report must compare an old-name baseline with a new-name run as
the same rows (a regression still flagged, never "nothing compared"), and a
bisect step must find a row under either name, since a bisect across the
rename builds commits that print the old one.  CUDA rows keep `wo_a`."""
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import report  # noqa: E402
import report_runs  # noqa: E402
import test_report as tr  # noqa: E402

STEP = os.path.join(HERE, "..", "..", "ci", "bisect-step")
OLD, NEW = "wo_a/grouped/fp8/t1/tune=off", "g4n256k512/grouped/fp8/t1/tune=off"
OLD_LOOP, NEW_LOOP = "wo_a/loop/fp8/t1/tune=off", "g4n256k512/loop/fp8/t1/tune=off"


def load_bisect_step():
    loader = importlib.machinery.SourceFileLoader("bisect_step", STEP)
    spec = importlib.util.spec_from_loader("bisect_step", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class ReportAcrossTheRename(tr.ReportCase):
    def test_an_old_name_cpu_baseline_compares_with_new_name_rows(self):
        # The nightly before the rename wrote wo_a/...; the one after writes
        # g4n256k512/... for the same rows, the grouped one planted 10 % slower.
        pa = self.put_record("a", 0, {OLD: tr.noisy(1, 10), OLD_LOOP: tr.noisy(2, 20)})
        self.put_record("b", 60, {NEW: tr.noisy(3, 11), NEW_LOOP: tr.noisy(4, 20)})
        rc, out, err = tr.run_report(["--history", self.hist, "--out", self.out])
        self.assertNotIn("nothing compared", out)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("2 benchmark rows tested", out)
        self.assertIn(f"| {NEW} | cpu |", out)            # flagged under today's name
        self.assertNotIn(f"| {NEW_LOOP} | cpu |", out)     # the unchanged row is not
        self.assertNotIn("| wo_a/", out)
        # The bisect it prints compares with the old record (which holds the
        # row under its old name) and names the row as today's bench prints it.
        self.assertIn(f"--baseline-record {os.path.abspath(pa)} ", out)
        self.assertIn(f"--perf name={NEW} ", out)
        # One row in the history, so one trend.
        runs = report.group_runs(self.records())
        self.assertEqual(sorted(runs[0].bench), sorted(runs[1].bench))

    def test_an_old_name_latest_run_compares_too(self):
        # A rerun of a commit from before the rename, against a newer baseline.
        self.put_record("a", 0, {NEW: tr.noisy(1, 10)})
        self.put_record("b", 60, {OLD: tr.noisy(2, 11)})
        rc, out, err = tr.run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1, out + err)
        self.assertIn(f"| {NEW} | cpu |", out)

    def test_cuda_rows_keep_wo_a(self):
        # wo_a is the real CUDA shape: its rows are not renamed...
        self.put_record("a", 0, {OLD: tr.noisy(1, 10)}, backend="cuda")
        self.put_record("b", 60, {OLD: tr.noisy(2, 11)}, backend="cuda")
        rc, out, err = tr.run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1, out + err)
        self.assertIn(f"| {OLD} | cuda |", out)
        # ...and a CUDA row is never the CPU shape's row.
        self.put_record("c", 120, {NEW: tr.noisy(3, 11)}, backend="cuda")
        rc, out, err = tr.run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 2, out + err)
        self.assertIn("nothing compared", out)


class BisectStepAcrossTheRename(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="vg-legacy-names-")
        self.cwd = os.getcwd()
        subprocess.run(["git", "init", "-q", self.dir], check=True)    # bisect-step runs in a checkout
        os.chdir(self.dir)
        self.step = load_bisect_step()

    def tearDown(self):
        os.chdir(self.cwd)
        shutil.rmtree(self.dir, ignore_errors=True)

    def record(self, names, center):
        path = os.path.join(self.dir, f"record-{len(os.listdir(self.dir))}.json")
        with open(path, "w") as f:
            json.dump({"bench": [{"backend": "cpu", "name": n, "kind": "kernel", "samples_us": tr.noisy(1, center)}
                                 for n in names]}, f)
        return path

    def bench_output(self, names, center, backend="cpu"):
        path = os.path.join(self.dir, f"bench-{len(os.listdir(self.dir))}.json")
        rows = [{"name": n, "kind": "kernel", "samples_us": tr.noisy(2, center), "median_us": center}
                for n in names]
        with open(path, "w") as f:
            json.dump({"tool": "bench", "backend": backend, "rows": rows}, f)
        return path

    def run_step(self, baseline, bench, perf=f"name={NEW}"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = self.step.main(["--baseline-record", baseline, "--max-regression", "5%", "--perf", perf,
                                 "--build", os.path.join(self.dir, "build"), "--build-cmd", "true",
                                 "--bench-cmd", f"cp {bench} {{json}}"])
        return rc, out.getvalue()

    def test_a_step_finds_the_row_under_either_name(self):
        for base_names in ((OLD, OLD_LOOP), (NEW, NEW_LOOP)):
            base = self.record(base_names, 10)
            for commit_names in ((OLD, OLD_LOOP), (NEW, NEW_LOOP)):
                with self.subTest(baseline=base_names[0], commit=commit_names[0]):
                    # The recipe's filter is today's name; a commit before the
                    # rename prints the old one.
                    rc, out = self.run_step(base, self.bench_output(commit_names, 10))
                    self.assertEqual(rc, 0, out)
                    self.assertIn("1 row(s) within 5% of the baseline", out)
                    rc, out = self.run_step(base, self.bench_output(commit_names, 13))
                    self.assertEqual(rc, 1, out)
                    self.assertRegex(out, r"SLOW " + re.escape(NEW) + r"\b")
                    # A filter with the old name finds it too.
                    rc, out = self.run_step(base, self.bench_output(commit_names, 13), perf=f"name={OLD}")
                    self.assertEqual(rc, 1, out)

    def test_cuda_rows_are_not_aliased(self):
        base = self.record([OLD], 10)
        with open(base) as f:
            rec = json.load(f)
        rec["bench"][0]["backend"] = "cuda"
        with open(base, "w") as f:
            json.dump(rec, f)
        rc, out = self.run_step(base, self.bench_output([NEW], 13, backend="cuda"), perf="kind=kernel")
        self.assertEqual(rc, 125, out)
        self.assertIn("no benchmark row in common with the baseline record", out)

    def test_its_table_is_the_reports_table(self):
        # bisect-step runs from outside the tree, at commits that may lack
        # reports/: it carries a copy of the table, which must agree.
        self.assertEqual(self.step.LEGACY_ROW_PREFIXES, report_runs.LEGACY_ROW_PREFIXES)
        self.assertIn(("cpu", "wo_a/", "g4n256k512/"), report_runs.LEGACY_ROW_PREFIXES)


if __name__ == "__main__":
    unittest.main()
