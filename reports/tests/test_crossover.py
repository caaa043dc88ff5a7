"""The crossover (issue 31): the time-against-M plot data per family (each
plan kind's fastest plan, the tuned choice, cuBLAS BF16), its plot and
section on the page, and issue 31's targets in targets.json checked on
synthetic `voltgate bench --shape crossover` files (gen_records.py); a run
from before the kind rows has no crossover and breaks nothing."""
import datetime
import io
import os
import random
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import gen_records  # noqa: E402
import record  # noqa: E402
import report  # noqa: E402
import targets  # noqa: E402

T0 = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
MID = (32, 64, 128, 256)


def fp8_speedup(m):
    """fp8 meets every crossover target: 1.8x cuBLAS at mid M, 0.9x at 4096."""
    return 1.8 if 17 <= m <= 256 else (0.9 if m >= 4096 else 1.2)


def awq_speedup(m):
    """awq misses: 1.8x (not 2x) at 32 and 64, 0.95x (slower) at 256, 0.7x at 4096."""
    return {32: 1.8, 64: 1.8, 128: 1.5, 256: 0.95, 4096: 0.7}.get(m, 1.2)


class CrossoverCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="vg-crossover-")
        self.hist = os.path.join(self.dir, "history")
        self.out = os.path.join(self.dir, "out")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write_run(self, benches, minute=0):
        rec = record.build_record(bench=[(f"bench-cuda-{i}.json", b) for i, b in enumerate(benches)],
                                  repo=self.dir, now=T0 + datetime.timedelta(minutes=minute))
        rec.update(commit=f"{minute:02d}" * 20, short_commit=f"{minute:02d}" * 5, dirty=False)
        return record.write_record(rec, self.hist)

    def latest(self):
        recs, problems = record.load_records(self.hist)
        self.assertEqual(problems, [])
        runs = report.group_runs(recs)
        return max(runs, key=lambda r: (r.last_key, r.first_key))

    def crossover_run(self):
        rng = random.Random(31)
        # awq's tuned choice is 10 % slower than the fastest plan at M=128.
        self.write_run([gen_records.make_crossover_bench(rng, 12, "fp8", fp8_speedup),
                        gen_records.make_crossover_bench(rng, 12, "awq", awq_speedup,
                                                         lambda m: 0.9 if m == 128 else 1.0)])
        return self.latest()

    def report(self, *extra):
        so, se = io.StringIO(), io.StringIO()
        with redirect_stdout(so), redirect_stderr(se):
            rc = report.main(["--history", self.hist, "--out", self.out, *extra])
        with open(os.path.join(self.out, "index.html")) as f:
            return rc, so.getvalue(), se.getvalue(), f.read()


class PlotData(CrossoverCase):
    def test_a_line_per_kind_the_tuned_choice_and_the_peer_per_family_and_shape(self):
        data = report.crossover_series(self.crossover_run())
        self.assertEqual(set(data), {("cuda", "fp8"), ("cuda", "awq")})
        for fam in ("fp8", "awq"):
            shapes = data[("cuda", fam)]
            # prefill4096's M=N=K=4096 row belongs to n4096k4096 by its fields
            self.assertEqual(set(shapes), {"n4096k4096", "n4096k14336"})
            for shape, lines in shapes.items():
                with self.subTest(family=fam, shape=shape):
                    self.assertEqual(set(lines), {"kind=decode", "kind=tiled", "kind=dequant+cublas",
                                                  report.CROSSOVER_TUNED, report.CROSSOVER_PEER})
                    ms = lambda line: [m for m, _, _ in lines[line]]   # noqa: E731
                    self.assertEqual(ms(report.CROSSOVER_TUNED), list(gen_records.CROSSOVER_M))
                    self.assertEqual(ms(report.CROSSOVER_PEER), list(gen_records.CROSSOVER_M))
                    self.assertEqual(ms("kind=tiled"), list(gen_records.CROSSOVER_M))
                    self.assertEqual(ms("kind=decode"), [1, 16, 32, 64])
                    self.assertEqual(ms("kind=dequant+cublas"), [32, 64, 128, 256, 512, 1024, 4096, 8192])
        # the figures are the rows' medians, and the plan rides along
        lines = data[("cuda", "fp8")]["n4096k4096"]
        m4096 = self.latest().bench[("cuda", "prefill4096/dense/fp8/m4096/kind=dequant+cublas")]
        self.assertIn((4096, m4096["median_us"], m4096["plan"]), lines["kind=dequant+cublas"])
        peer = dict((m, us) for m, us, _ in lines[report.CROSSOVER_PEER])
        tuned = dict((m, us) for m, us, _ in lines[report.CROSSOVER_TUNED])
        self.assertAlmostEqual(peer[64] / tuned[64], 1.8, delta=0.05)

    def test_the_table_says_where_the_tuned_choice_misses_the_fastest_plan(self):
        rows = {(r["family"], r["shape"], r["m"]): r for r in report.crossover_table(self.crossover_run())}
        self.assertEqual(len(rows), 2 * 2 * len(gen_records.CROSSOVER_M))
        miss = rows[("awq", "n4096k14336", 128)]
        self.assertAlmostEqual(miss["tuned_over_best"], 1 / 0.9, delta=0.03)
        self.assertEqual(miss["best_kind"], "dequant+cublas")
        self.assertAlmostEqual(rows[("fp8", "n4096k4096", 4096)]["speedup"], 0.9, delta=0.03)
        self.assertLess(max(r["tuned_over_best"] for k, r in rows.items() if k[0] == "fp8"), 1.03)
        # where the tuned plan is the fastest plan the page reads 1.0, not the two timings' drift
        same = rows[("fp8", "n4096k4096", 8192)]
        self.assertEqual((same["tuned_plan"], same["tuned_over_best"]), (same["best_plan"], 1.0))

    def test_a_run_without_kind_rows_has_no_crossover(self):
        # gen_records.make_bench: a run from before issue 31 (a dense m16 row, no kind rows, no plan_kind)
        self.write_run([gen_records.make_bench(random.Random(1), 10)])
        latest = self.latest()
        self.assertEqual(report.crossover_series(latest), {})
        self.assertEqual(report.crossover_table(latest), [])
        self.assertEqual(report.plot_crossover(latest, self.dir, []), [])
        # tune rows and a peer at crossover M, but no kind rows: still none
        bench = gen_records.make_crossover_bench(random.Random(2), 10, "fp8", fp8_speedup)
        bench["rows"] = [r for r in bench["rows"] if "/kind=" not in r["name"]]
        self.write_run([bench], minute=5)
        self.assertEqual(report.crossover_series(self.latest()), {})


class Targets(CrossoverCase):
    def lines(self, run):
        return {(ln["id"], ln["group"]): ln for ln in targets.evaluate(targets.load_targets(), run.bench)
                if ln["source"] == "issue 31"}

    def test_issue_31_targets_per_family_and_shape(self):
        lines = self.lines(self.crossover_run())
        status = {k: ln["status"] for k, ln in lines.items()}
        for shape in ("n4096k4096", "n4096k14336"):
            # fp8: 1.8x at 32-128, never slower at 17-256, 0.9x at 4096, the tuner always on the best plan
            self.assertEqual(status[("crossover-fp8-over-cublas", f"shape={shape}")], "met")
            for tid in ("crossover-mid-not-slower-than-cublas", "crossover-m4096-tflops",
                        "crossover-tuned-vs-best-plan"):
                self.assertEqual(status[(tid, f"family=fp8 shape={shape}")], "met", tid)
            # awq: 1.8x where 2x is asked, 0.95x at 256, 0.7x at 4096, 10 % off the best plan at 128
            for tid, worst, row in (("crossover-4bit-over-cublas", 1.8, "m32"),
                                    ("crossover-mid-not-slower-than-cublas", 0.95, "m256"),
                                    ("crossover-m4096-tflops", 0.7, "m4096"),
                                    ("crossover-tuned-vs-best-plan", 0.9, "m128")):
                ln = lines[(tid, f"family=awq shape={shape}")]
                with self.subTest(target=tid, shape=shape):
                    self.assertEqual(ln["status"], "not met")
                    self.assertAlmostEqual(ln["worst"], worst, delta=0.04)
                    self.assertIn(f"/awq/{row if tid != 'crossover-4bit-over-cublas' else ''}", ln["worst_row"])
            # families not benched: a line each, not measured
            for fam in ("mxfp4", "nvfp4"):
                self.assertEqual(status[("crossover-4bit-over-cublas", f"family={fam} shape={shape}")],
                                 "not measured")
            self.assertEqual(status[("crossover-tuned-vs-best-plan", f"family=fp16 shape={shape}")], "not measured")
        # the M=N=K=4096 row (named prefill4096) counts in the n4096k4096 line, and no prefill4096 line exists
        m4096 = lines[("crossover-m4096-tflops", "family=awq shape=n4096k4096")]
        self.assertEqual((m4096["rows"], m4096["worst_row"]), (1, "prefill4096/dense/awq/m4096/tune=on"))
        self.assertFalse([k for k in lines if "prefill4096" in k[1]])
        best = lines[("crossover-tuned-vs-best-plan", "family=fp8 shape=n4096k4096")]
        self.assertEqual((best["rows"], best["met"]), (10, 10))

    def test_each_family_is_compared_with_the_peer_its_own_file_timed(self):
        # Two family runs of one session each time cuBLAS BF16; the second
        # file's peer reads 20 % slower.  fp8 (the second file) is 0.8x of
        # its own peer at M=4096, so 0.96x of it as timed next to it, 0.8x
        # of the first file's: its own counts, on the page and in the targets.
        rng = random.Random(7)
        first = gen_records.make_crossover_bench(rng, 10, "awq", lambda m: 1.0)
        second = gen_records.make_crossover_bench(rng, 10, "fp8", lambda m: 0.8 if m >= 4096 else 1.6)
        for r in second["rows"]:
            if r["kind"] == "peer":
                r["samples_us"] = [v * 1.2 for v in r["samples_us"]]
                for key in ("median_us", "min_us", "max_us"):
                    r[key] *= 1.2
        self.write_run([first, second])
        run = self.latest()
        lines = self.lines(run)
        m4096 = lines[("crossover-m4096-tflops", "family=fp8 shape=n4096k14336")]
        self.assertEqual(m4096["status"], "met")
        self.assertAlmostEqual(m4096["worst"], 0.96, delta=0.03)
        self.assertAlmostEqual(lines[("crossover-m4096-tflops", "family=awq shape=n4096k14336")]["worst"],
                               1.0, delta=0.03)
        rows = {(r["family"], r["shape"], r["m"]): r for r in report.crossover_table(run)}
        self.assertAlmostEqual(rows[("fp8", "n4096k14336", 4096)]["speedup"], 0.96, delta=0.03)
        self.assertAlmostEqual(rows[("awq", "n4096k14336", 4096)]["speedup"], 1.0, delta=0.03)

    def test_a_run_without_crossover_rows_measures_none_of_them(self):
        self.write_run([gen_records.make_bench(random.Random(1), 10)])
        lines = self.lines(self.latest())
        self.assertTrue(lines)
        self.assertEqual({ln["status"] for ln in lines.values()}, {"not measured"})

    def test_fastest_partner_and_escaping(self):
        doc = {"targets": [{"id": "t", "source": "issue 9", "text": "x", "backend": "cuda",
                            "name": "^(?P<shape>a\\+b)/m1/tune=on$", "by": ["shape"],
                            "value": "speedup_over_fastest",
                            "over": {"pattern": "^(.*)/tune=on$", "repl": "\\1/kind=.+"}, "min": 0.97}]}
        path = os.path.join(self.dir, "t.json")
        with open(path, "w") as f:
            f.write(__import__("json").dumps(doc))
        t = targets.load_targets(path)
        row = lambda us: {"kind": "kernel", "tokens": 1, "median_us": us}   # noqa: E731
        bench = {("cuda", "a+b/m1/tune=on"): row(10.0), ("cuda", "a+b/m1/kind=tiled"): row(12.0),
                 ("cuda", "a+b/m1/kind=decode"): row(9.5),
                 # '+' of the name is literal: "aab" must not be a partner of "a+b"
                 ("cuda", "aab/m1/kind=tiled"): row(1.0)}
        (ln,) = targets.evaluate(t, bench)
        self.assertEqual(ln["status"], "not met")
        self.assertAlmostEqual(ln["worst"], 0.95)
        # the fastest plan is the tuned plan itself, timed at another moment
        # of the run: the choice is right whatever the two times read
        plan = lambda us, p: dict(row(us), plan=p)   # noqa: E731
        bench = {("cuda", "a+b/m1/tune=on"): plan(424.9, "cuda.dense.dqcublas"),
                 ("cuda", "a+b/m1/kind=dequant+cublas"): plan(373.9, "cuda.dense.dqcublas"),
                 ("cuda", "a+b/m1/kind=tiled"): plan(2031.9, "cuda.dense.prefill.m128n128k64.s2.sk1")}
        (ln,) = targets.evaluate(t, bench)
        self.assertEqual((ln["status"], ln["worst"]), ("met", 1.0))
        self.assertEqual(targets.tuned_over_fastest(424.9, "a", 373.9, "a"), 1.0)
        # another plan of the same time ratio is a miss
        bench[("cuda", "a+b/m1/tune=on")] = plan(424.9, "cuda.dense.prefill.m64n64k64.s3.sk1")
        (ln,) = targets.evaluate(t, bench)
        self.assertEqual(ln["status"], "not met")
        self.assertAlmostEqual(ln["worst"], 373.9 / 424.9)
        # a repl naming a group the pattern lacks is a bad file
        doc["targets"][0]["over"]["repl"] = "\\2/kind=.+"
        with open(path, "w") as f:
            f.write(__import__("json").dumps(doc))
        with self.assertRaisesRegex(ValueError, "names a group"):
            targets.load_targets(path)


class OnThePage(CrossoverCase):
    def test_the_page_has_the_crossover_plot_and_table(self):
        self.crossover_run()
        rc, out, err, page = self.report()
        self.assertEqual(rc, 0, err)
        self.assertIn("Crossover: time against M per family (latest run)", page)
        self.assertIn("the tuned choice more than 3 % slower than the fastest plan at 2</summary>", page)
        if report.matplotlib_missing():
            self.skipTest("skipped: no matplotlib")
        for png in ("crossover-cuda-fp8.png", "crossover-cuda-awq.png"):
            self.assertTrue(os.path.getsize(os.path.join(self.out, png)) > 1000, png)
            self.assertIn(f"src='{png}'", page)

    def test_an_older_run_says_there_is_no_crossover(self):
        self.write_run([gen_records.make_bench(random.Random(1), 10)])
        rc, out, err, page = self.report()
        self.assertEqual(rc, 0, err)
        self.assertIn("No crossover rows in this run", page)
        self.assertFalse([f for f in os.listdir(self.out) if f.startswith("crossover")])


class BisectCommand(unittest.TestCase):
    def test_crossover_rows_are_measured_again_by_the_crossover_bench(self):
        row = lambda name, m: {"kind": "kernel", "backend": "cuda", "family": "awq", "name": name, "m": m}  # noqa: E731
        for name, m in (("n4096k14336/dense/awq/m128/kind=tiled", 128), ("n4096k4096/dense/awq/m64/tune=on", 64),
                        ("prefill4096/dense/awq/m4096/kind=dequant+cublas", 4096)):
            self.assertIn("--shape crossover", report._bench_cmd_for(row(name, m)), name)
        for name, m, shape in (("n4096k4096/dense/awq/m16/tune=on", 16, "dense"),
                               ("prefill4096/dense/awq/m4096/tune=on", 4096, "prefill"),
                               ("wo_a/grouped/awq/t6/tune=on", 48, "wo_a")):
            self.assertIn(f"--shape {shape} ", report._bench_cmd_for(row(name, m)), name)


if __name__ == "__main__":
    unittest.main()
