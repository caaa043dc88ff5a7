"""report.py: merging the shards of one commit, picking the baseline, the
verdict and exit status, and writing the page and its plots (Agg backend)."""
import datetime
import io
import json
import os
import random
import re
import shutil
import sys
import tempfile
import unittest
import unittest.mock
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import gen_records  # noqa: E402
import record  # noqa: E402
import report  # noqa: E402

T0 = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)


def run_report(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = report.main(argv)
    return rc, out.getvalue(), err.getvalue()


class ReportCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="vg-report-")
        self.hist = os.path.join(self.dir, "history")
        self.out = os.path.join(self.dir, "out")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def records(self):
        recs, problems = record.load_records(self.hist)
        self.assertEqual(problems, [])
        return recs

    def put_record(self, commit, when, rows, runner="local", shard=None, golden=None, run_id=None, extra=None,
                   backend="cpu"):
        """A record with bench rows {name: samples} of one backend and golden rows
        {case: verdict}; extra {name: {field: value}} adds fields to bench rows."""
        bench_rows = []
        for name, samples in rows.items():
            bench_rows.append({"name": name, "kind": "kernel", "path": "grouped", "family": "fp8", "m": 48,
                               "n": 1024, "k": 4096, "groups": 8, "tokens": 6, "plan": "p", "decision": "reuse",
                               "samples_us": samples, "median_us": report.stats.median(samples),
                               "min_us": min(samples), "max_us": max(samples), "bytes": 33554432,
                               "flops": 402653184, "bandwidth_fraction": 0.8, "max_rel_rms": 1e-4,
                               **(extra or {}).get(name, {})})
        bench = {"tool": "bench", "backend": backend, "gpu": None, "driver": None, "cuda_version": None,
                 "arch_list": None, "policy_hash": "00000000000000ff", "config": {}, "copy_bandwidth_gbs": 10.0,
                 "rows": bench_rows}
        grows = []
        for case, verdict in (golden or {}).items():
            grows.append({"case": case, "file": case + ".h5", "family": "fp8", "path": "dense", "m": 1, "n": 256,
                          "k": 384, "groups": 1, "tokens": 1, "backend": "cpu", "plan": "p0",
                          "rel_rms": 1e-4 if verdict == "PASS" else 1.0, "max_abs": 1e-3, "tol_rel_rms": 1e-3,
                          "tol_max_abs": 0.05, "verdict": verdict})
        rec = record.build_record(golden=[("g.json", {"tool": "golden-verify", "rows": grows})],
                                  bench=[("b.json", bench)], runner=runner, shard=shard, run_id=run_id,
                                  repo=self.dir, now=T0 + datetime.timedelta(minutes=when))
        rec.update(commit=commit * 40 if len(commit) == 1 else commit, dirty=False)
        rec["short_commit"] = rec["commit"][:10]
        return record.write_record(rec, self.hist)


def noisy(seed, center, n=30):
    rng = random.Random(seed)
    return [round(center * (1 + rng.gauss(0, 0.01)), 5) for _ in range(n)]


class Shards(ReportCase):
    def test_shards_of_one_commit_merge_into_one_run(self):
        self.put_record("a", 0, {"x": noisy(1, 10)}, runner="gpu0", shard="0/2", golden={"c1": "PASS"})
        self.put_record("a", 1, {"y": noisy(2, 20)}, runner="gpu1", shard="1/2", golden={"c2": "PASS"})
        self.put_record("b", 60, {"x": noisy(3, 10)}, runner="gpu0", shard="0/2")
        self.put_record("b", 61, {"y": noisy(4, 20)}, runner="gpu1", shard="1/2")
        runs = report.group_runs(self.records())
        self.assertEqual([r.commit[0] for r in runs], ["a", "b"])
        self.assertEqual(sorted(runs[0].bench), [("cpu", "x"), ("cpu", "y")])
        self.assertEqual(sorted(k[1] for k in runs[0].golden), ["c1", "c2"])
        self.assertEqual(len(runs[1].records), 2)

    def test_a_rerun_of_the_same_commit_is_a_new_run(self):
        self.put_record("a", 0, {"x": noisy(1, 10)})
        self.put_record("a", 30, {"x": noisy(2, 10)})
        runs = report.group_runs(self.records())
        self.assertEqual(len(runs), 2)
        self.assertIs(report.pick_baseline(runs, runs[1]), runs[0])

    def test_run_id_groups_records_of_different_commits_apart(self):
        self.put_record("a", 0, {"x": noisy(1, 10)}, runner="r1", run_id="n1")
        self.put_record("a", 5, {"y": noisy(1, 10)}, runner="r2", run_id="n2")
        self.assertEqual(len(report.group_runs(self.records())), 2)

    def test_duplicate_rows_across_shards_are_reported(self):
        self.put_record("a", 0, {"x": noisy(1, 10)}, runner="gpu0", shard="0/2")
        self.put_record("a", 1, {"x": noisy(2, 10)}, runner="gpu1", shard="1/2")
        run = report.group_runs(self.records())[0]
        self.assertEqual(len(run.bench), 1)
        self.assertEqual(len(run.duplicates), 1)

    def test_merged_shards_compare_per_row(self):
        for i, (commit, slow) in enumerate((("a", 1.0), ("b", 1.10))):
            self.put_record(commit, 60 * i, {"x": noisy(10 + i, 10)}, runner="gpu0", shard="0/2")
            self.put_record(commit, 60 * i + 1, {"y": noisy(20 + i, 20 * slow)}, runner="gpu1", shard="1/2")
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1)
        self.assertIn("| y | cpu |", out)
        self.assertNotIn("| x | cpu |", out)


class Verdict(ReportCase):
    def test_first_run_has_no_baseline(self):
        self.put_record("a", 0, {"x": noisy(1, 10)}, golden={"c": "PASS"})
        rc, out, err = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 0, err)
        self.assertIn("baseline none (first run)", out)

    def test_noise_passes_and_a_slowdown_fails(self):
        self.put_record("a", 0, {"x": noisy(1, 10), "z": noisy(5, 3)})
        self.put_record("b", 60, {"x": noisy(2, 10), "z": noisy(6, 3)})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 0, out)
        self.assertIn("no regression", out)
        self.put_record("c", 120, {"x": noisy(3, 11), "z": noisy(7, 3.03 * 1.0)})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1)
        self.assertIn("| x | cpu |", out)
        self.assertIn("+10.", out)
        self.assertNotIn("| z |", out)

    def test_runs_written_in_one_second_keep_their_order(self):
        # A fast machine writes several records of one commit within a
        # second: same date, names name.json, name-2.json ... name-11.json
        # (a string sort puts -10 and -11 before -2, and -2 before .json).
        paths = [self.put_record("a", 0, {"x": noisy(i, 10)}) for i in range(10)]
        paths.append(self.put_record("a", 0, {"x": noisy(99, 12)}))
        self.assertTrue(paths[-1].endswith("-11.json"), paths[-1])
        rc, out, err = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1, out + err)             # the last one written is the latest, and slower
        self.assertIn("| x | cpu |", out)
        runs = report.group_runs(self.records())
        self.assertEqual([os.path.basename(r.records[0]["_file"]) for r in runs],
                         [os.path.basename(p) for p in paths])

    def test_baseline_commit_and_record(self):
        pa = self.put_record("a", 0, {"x": noisy(1, 11)})
        self.put_record("b", 60, {"x": noisy(2, 10)})
        self.put_record("c", 120, {"x": noisy(3, 11)})
        rc, _, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1)                                    # vs b: 10 % slower
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out, "--baseline", "aaaa"])
        self.assertEqual(rc, 0, out)                               # vs a: the same
        rc, _, _ = run_report(["--history", self.hist, "--out", self.out, "--baseline-record", pa])
        self.assertEqual(rc, 0)
        rc, _, err = run_report(["--history", self.hist, "--out", self.out, "--baseline", "dddd"])
        self.assertEqual(rc, 2)
        self.assertIn("no earlier run of that commit", err)

    def test_too_few_samples_are_not_flagged(self):
        self.put_record("a", 0, {"x": [10.0, 10.1, 10.0, 10.2]})
        self.put_record("b", 60, {"x": [20.0, 20.1, 20.0, 20.2]})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 0, out)
        self.assertIn("1 with too few samples", out)
        with open(os.path.join(self.out, "index.html")) as f:
            self.assertIn("too few samples", f.read())

    def test_golden_pass_to_fail_is_a_regression(self):
        self.put_record("a", 0, {"x": noisy(1, 10)}, golden={"c1": "PASS", "c2": "PASS"})
        self.put_record("b", 60, {"x": noisy(2, 10)}, golden={"c1": "PASS", "c2": "FAIL"})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1)
        self.assertIn("| c2 | cpu | PASS->FAIL | p0 |", out)
        self.assertNotIn("| c1 |", out)

    def test_a_regression_comes_with_the_bisect_that_pins_it(self):
        pa = self.put_record("a", 0, {"x": noisy(1, 10), "y": noisy(2, 10)})
        self.put_record("b", 60, {"x": noisy(3, 10.5), "y": noisy(4, 12)})     # y slowed down most, ~20 %
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out, "--min-effect", "0.04"])
        self.assertEqual(rc, 1)
        self.assertIn("git bisect start " + "b" * 12 + " " + "a" * 12, out)
        # The step is bad above half the slowdown (about 10 %), not at the 4 % that flags a row.
        m = re.search(r"git bisect run /tmp/bisect-step --baseline-record (\S+) --max-regression ([\d.]+)% "
                      r"--perf name=y --build build-bisect --build-cmd 'make -j\"\$\(nproc\)\" CUDA=0 BUILD=\{build\} all'\n",
                      out)
        self.assertIsNotNone(m, out)
        self.assertEqual(m.group(1), os.path.abspath(pa))
        self.assertAlmostEqual(float(m.group(2)), 10.0, delta=1.5)
        with open(os.path.join(self.out, "index.html")) as f:
            page = f.read()
        self.assertIn("Pin it to a commit", page)
        self.assertIn("--perf name=y", page)
        # A golden case that passed at the baseline goes first, and only it is judged.
        self.put_record("c", 120, {"x": noisy(5, 10.5), "y": noisy(6, 12)}, golden={"c1": "FAIL", "c[2]": "FAIL"})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1)
        self.assertIn("git bisect start " + "c" * 12 + " " + "b" * 12, out)
        self.assertIn("git bisect run /tmp/bisect-step --golden --case c1 --case 'c[[]2]' --build build-bisect "
                      "--build-cmd 'make -j\"$(nproc)\" CUDA=0 BUILD={build} all'\n", out)
        self.assertNotIn("--baseline-record", out)
        # Still failing at d: those cases cannot be bisected from c; the slowdown of y can.
        self.put_record("d", 180, {"x": noisy(7, 10.5), "y": noisy(8, 14)}, golden={"c1": "FAIL", "c[2]": "FAIL"})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1)
        self.assertIn("--perf name=y", out)
        self.assertNotIn("--golden", out)
        self.assertIn("2 failing golden case(s) failed at the baseline too", out)

    def test_a_slowdown_without_a_code_change_is_not_bisected(self):
        self.put_record("a", 0, {"x": noisy(1, 10)})
        self.put_record("a", 60, {"x": noisy(2, 11)})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1)
        self.assertNotIn("git bisect", out)
        self.assertIn("Bisect: the baseline and the latest run are the same commit (aaaaaaa): no code changed", out)
        self.put_record("b", 120, {"x": noisy(3, 12)})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertIn("git bisect start", out)
        # Nothing flagged: no bisect at all.
        self.put_record("c", 180, {"x": noisy(4, 12)})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 0, out)
        self.assertNotIn("bisect", out.lower())

    def test_uncommitted_changes_are_not_bisected(self):
        def dirty(path):
            with open(path) as f:
                rec = json.load(f)
            rec["dirty"] = True
            with open(path, "w") as f:
                json.dump(rec, f)
        dirty(self.put_record("a", 0, {"x": noisy(1, 10)}))
        dirty(self.put_record("a", 60, {"x": noisy(2, 11)}))
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1)
        self.assertNotIn("git bisect", out)
        self.assertIn("uncommitted changes: what changed is in no commit", out)
        dirty(self.put_record("b", 120, {"x": noisy(3, 12)}))
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertNotIn("git bisect", out)
        self.assertIn("the latest run is of bbbbbbb with uncommitted changes", out)

    def test_a_baseline_sharing_no_row_compares_nothing_and_exits_2(self):
        # Another backend's rows, or a synthetic history: a nightly must not
        # go green with "no regression, 0 rows tested".
        self.put_record("a", 0, {"x": noisy(1, 10)}, golden={"c1": "PASS"})
        self.put_record("b", 60, {"y": noisy(2, 10)}, golden={"c2": "PASS"})
        rc, out, err = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 2, out + err)
        self.assertIn("nothing compared: the baseline", out)
        self.assertNotIn("no regression", out)
        with open(os.path.join(self.out, "index.html")) as f:
            self.assertIn("nothing compared", f.read())
        # One shared golden row is a comparison.
        self.put_record("c", 120, {"z": noisy(3, 10)}, golden={"c2": "PASS"})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 0, out)
        self.assertIn("no regression", out)

    def test_a_backend_that_stopped_running_fails_the_run(self):
        # The baseline ran the CPU and CUDA sides; tonight the CUDA side did
        # not run (a lost driver): the CPU rows compare fine, which must not
        # read as a pass.
        self.put_record("a", 0, {"x": noisy(1, 10)}, runner="cpu0", shard="0/2")
        self.put_record("a", 1, {"y": noisy(2, 20)}, runner="gpu0", shard="1/2", backend="cuda")
        self.put_record("b", 60, {"x": noisy(3, 10)}, runner="cpu0", shard="0/2")
        rc, out, err = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1, out + err)
        self.assertIn("VANISHED: the baseline ran 1 benchmark and 0 golden rows on cuda; "
                      "the latest run has none there", out)
        self.assertNotIn("no regression", out)
        # Both sides ran again: no verdict from the backends.
        self.put_record("c", 120, {"x": noisy(4, 10)}, runner="cpu0", shard="0/2")
        self.put_record("c", 121, {"y": noisy(5, 20)}, runner="gpu0", shard="1/2", backend="cuda")
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out, "--baseline", "a" * 40])
        self.assertEqual(rc, 0, out)
        self.assertNotIn("VANISHED", out)

    def test_the_bisect_threshold_is_never_under_the_rows_own_spread(self):
        # x's median moved 25 % between runs of no consequence; a 40 % slowdown
        # bisected at half of it (20 %) would call noise a bad commit.
        self.put_record("a", 0, {"x": noisy(1, 10)})
        self.put_record("b", 60, {"x": noisy(2, 12.5)})
        self.put_record("c", 120, {"x": noisy(3, 10)})
        self.put_record("d", 180, {"x": noisy(4, 14)})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1, out)
        m = re.search(r"--max-regression ([\d.]+)% ", out)
        self.assertIsNotNone(m, out)
        self.assertGreaterEqual(float(m.group(1)), 24.0, out)
        self.assertLess(float(m.group(1)), 40.0, out)
        self.assertIn("its own spread sets it", out)
        self.assertIn("its median moved", out)

    def test_the_bisect_step_measures_the_row_as_regress_did(self):
        row = {"kind": "kernel", "backend": "cuda", "family": "awq", "name": "n4096k4096/dense/awq/m1/tune=off"}
        self.assertEqual(report._bench_cmd_for(row), "{build}/bin/voltgate bench --backend cuda --family awq "
                                                     "--shape dense --json {json}")
        row.update(name="wo_a/grouped/nvfp4/t6/tune=on", family="nvfp4")
        self.assertIn("--family nvfp4 --shape wo_a --tokens 6 --paths grouped --json", report._bench_cmd_for(row))
        # the grouped shape's rows that only ci/regress's own --tokens and --paths make
        row.update(name="wo_a/moe-skewed/nvfp4/t64/tune=off")
        self.assertIn("--shape wo_a --tokens 64 --paths moe --routing skewed --json", report._bench_cmd_for(row))
        row.update(name="wo_a/peer-cublas-bmm-bf16/t32")
        self.assertIn("--shape wo_a --tokens 32 --json", report._bench_cmd_for(row))
        row.update(name="prefill4096/dense/fp8/m4096/tune=on", family="fp8")
        self.assertIn("--shape prefill ", report._bench_cmd_for(row))
        self.assertIsNone(report._bench_cmd_for(dict(row, backend="cpu")))
        self.assertIn("--dispatch", report._bench_cmd_for(dict(row, kind="dispatch")))

    def test_golden_new_failure_and_recovery(self):
        self.put_record("a", 0, {"x": noisy(1, 10)}, golden={"c1": "FAIL"})
        self.put_record("b", 60, {"x": noisy(2, 10)}, golden={"c1": "PASS", "c3": "FAIL"})
        rc, out, _ = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1)
        self.assertIn("| c3 | cpu | new FAIL | p0 |", out)
        self.assertNotIn("| c1 |", out)

    def test_golden_nan_error_fails_and_is_drawn(self):
        self.put_record("a", 0, {"x": noisy(1, 10)}, golden={"c1": "PASS"})
        path = self.put_record("b", 60, {"x": noisy(2, 10)}, golden={"c1": "FAIL"})
        with open(path) as f:
            rec = json.load(f)
        rec["golden"][0]["rel_rms"] = None            # NaN in the tool -> null in JSON
        os.unlink(path)
        with open(path, "w") as f:
            json.dump(rec, f)
        rc, out, err = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1, err)
        self.assertIn("| c1 | cpu | PASS->FAIL | p0 | NaN |", out)
        self.assertTrue(os.path.exists(os.path.join(self.out, "golden-rel_rms.png")))

    def test_bad_record_is_skipped_and_named(self):
        self.put_record("a", 0, {"x": noisy(1, 10)})
        with open(os.path.join(self.hist, "zz-broken.json"), "w") as f:
            f.write("{not json")
        rc, _, err = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 0)
        self.assertIn("zz-broken.json: not valid JSON", err)
        with open(os.path.join(self.out, "index.html")) as f:
            self.assertIn("zz-broken.json", f.read())

    def test_a_min_effect_that_is_not_a_number_is_refused(self):
        # NaN compares false with everything: it would flag nothing and pass
        self.put_record("a", 0, {"x": noisy(1, 10)})
        self.put_record("b", 60, {"x": noisy(3, 12)})       # 20 % slower
        for bad in ("nan", "inf", "-0.1"):
            rc, out, err = run_report(["--history", self.hist, "--out", self.out, "--min-effect", bad])
            self.assertEqual(rc, 2, bad)
            self.assertIn("--min-effect >= 0", err)
            self.assertNotIn("no regression", out)

    def test_out_that_cannot_be_made_is_exit_2(self):
        # --out under a regular file: exit 2 naming it, no traceback, no verdict
        self.put_record("a", 0, {"x": noisy(1, 10)})
        blocker = os.path.join(self.dir, "a-file")
        with open(blocker, "w") as f:
            f.write("x")
        out_dir = os.path.join(blocker, "out")
        rc, out, err = run_report(["--history", self.hist, "--out", out_dir])
        self.assertEqual(rc, 2)
        self.assertIn(f"cannot write the report in {out_dir}", err)
        self.assertNotIn("no regression", out)

    def test_no_records_is_exit_2(self):
        os.makedirs(self.hist)
        rc, _, err = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 2)
        self.assertIn("no valid record", err)


class Files(ReportCase):
    def test_page_and_plots_are_written(self):
        gen_records.make_history(self.hist, commits=3, nsamp=12, shards=2, slow_last=0.1)
        rc, out, err = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1, err)
        names = os.listdir(self.out)
        self.assertIn("index.html", names)
        with open(os.path.join(self.out, "index.html")) as f:
            page = f.read()
        pngs = [n for n in names if n.endswith(".png")]
        for want in ("bandwidth-cuda.png", "golden-rel_rms.png", "golden-headroom.png", "replay.png", "coverage.png"):
            self.assertIn(want, pngs)
        self.assertTrue(any(n.startswith("history-") for n in pngs))
        # Each kernel trend has its bandwidth fraction trend beside it.
        self.assertTrue(any(n.startswith("history-cuda-kernel-") and n.endswith("-bw.png") for n in pngs))
        # A regressed row links to its trend plot, which the page holds.
        links = re.findall(r"<a href='#(plot-history-[^']+)'>", page)
        self.assertTrue(links, "no regressed row links to its trend")
        for anchor in links:
            self.assertIn(f"id='{anchor}'", page)
        for png in pngs:                           # every plot is a real PNG the page shows
            with open(os.path.join(self.out, png), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertIn(f"src='{png}'", page)
        for heading in ("Loop vs grouped", "Bandwidth fraction", "Golden error", "measured during serving",
                        "Coverage", "Each benchmark over commits"):
            self.assertIn(heading, page)
        self.assertIn("REGRESSED", page)
        self.assertFalse([n for n in names if n.startswith(".index-")])

    def test_without_matplotlib_the_verdict_and_tables_stay(self):
        # A machine set up with VG_DEPS=build has no matplotlib: the page and
        # the verdict are still written, and the page says why there are no plots.
        gen_records.make_history(self.hist, commits=3, nsamp=12, shards=2, slow_last=0.1)
        with unittest.mock.patch.dict(sys.modules, {"matplotlib": None, "matplotlib.pyplot": None}):
            rc, out, err = run_report(["--history", self.hist, "--out", self.out])
        self.assertEqual(rc, 1, err)
        self.assertIn("plots not drawn", err.lower())
        names = os.listdir(self.out)
        self.assertEqual([n for n in names if n.endswith(".png")], [])
        with open(os.path.join(self.out, "index.html")) as f:
            page = f.read()
        self.assertIn("REGRESSED", page)
        self.assertIn("python3-matplotlib", page)
        self.assertIn("Loop vs grouped", page)

    def test_ceiling_fraction_and_a_failed_output_are_shown(self):
        self.put_record("a", 0, {"x": noisy(1, 10), "y": noisy(2, 10)})
        self.put_record("b", 60, {"x": noisy(3, 10), "y": noisy(4, 10)},
                        extra={"x": {"ceiling_fraction": 0.9731, "stream_ceiling_us": 9.7, "output_ok": True},
                               "y": {"ceiling_fraction": None, "stream_ceiling_us": None, "output_ok": False}})
        rc, out, err = run_report(["--history", self.hist, "--out", self.out])
        with open(os.path.join(self.out, "index.html")) as f:
            page = f.read()
        self.assertIn("ceil fraction", page)
        self.assertIn("0.973", page)
        self.assertEqual(page.count("OUTPUT CHECK FAILED"), 1)

    def test_loop_vs_grouped_pairs_rows(self):
        gen_records.make_history(self.hist, commits=1, nsamp=10, coverage=False)
        run = report.group_runs(self.records())[0]
        rows = report.loop_vs_grouped(run)
        # 3 families x 6 token counts x tune on/off.
        self.assertEqual(len(rows), 36)
        r = [x for x in rows if x["variant"] == "wo_a/*/fp8/t6/tune=on"][0]
        self.assertAlmostEqual(r["ratio"], r["loop_us"] / r["grouped_us"])
        self.assertGreater(r["ratio"], 4.0)

    def test_tuner_vs_heuristic_marks_a_slower_pick(self):
        tuned = {"wo_a/grouped/fp8/t4/tune=on": [11.5, 11.6, 11.7],    # another plan, 12 % slower
                 "wo_a/grouped/fp8/t4/tune=off": [10.3, 10.4, 10.5],
                 "wo_a/grouped/fp8/t8/tune=on": [9.0, 9.1, 9.2],       # another plan, 13 % faster
                 "wo_a/grouped/fp8/t8/tune=off": [10.4, 10.5, 10.6],
                 "wo_a/grouped/fp8/t1/tune=on": [12.0, 12.1, 12.2],    # the same plan: not a decision
                 "wo_a/grouped/fp8/t1/tune=off": [10.0, 10.1, 10.2],
                 "wo_a/grouped/fp8/t2/tune=on": [10.0, 10.1, 10.2]}    # no tune=off partner
        plans = {"wo_a/grouped/fp8/t4/tune=on": "m8n32", "wo_a/grouped/fp8/t8/tune=on": "m16n16"}
        extra = {name: {"plan": plans.get(name, "m8n16"), "decision": "measure" if "tune=on" in name else "heuristic"}
                 for name in tuned}
        self.put_record("a", 0, tuned, extra=extra, backend="cuda")     # wo_a is a CUDA shape
        run = report.group_runs(self.records())[0]
        rows = report.tuner_vs_heuristic(run)
        self.assertEqual([r["variant"] for r in rows], ["wo_a/grouped/fp8/t4/tune=*", "wo_a/grouped/fp8/t8/tune=*"])
        self.assertEqual([r["mark"] for r in rows], ["slower", "faster"])
        self.assertAlmostEqual(rows[0]["loss"], 11.6 / 10.4 - 1.0)
        self.assertEqual((rows[0]["heuristic_plan"], rows[0]["tuned_plan"]), ("m8n16", "m8n32"))
        rc, _, err = run_report(["--history", self.hist, "--out", self.out])
        page = open(os.path.join(self.out, "index.html")).read()
        self.assertIn("Tuner vs heuristic", page)
        self.assertIn("more than 10 % slower in 1, more than 10 % faster in 1", page)
        self.assertIn("+11.5%", page)


if __name__ == "__main__":
    unittest.main()
