"""voltgate bench --shape crossover (issue 31): at each crossover M, beside
the tune rows, one row per plan kind the tuner offers there, named
SHAPE/dense/FAMILY/mM/kind=KIND: the fastest plan of that kind, with every
plan of the kind timed (candidates_us).  The CPU backend runs the same code
path on its small shape (n512k512, M = 1 to 256); its plan table, read from
`voltgate plans`, says which plans each M must have had timed: the dense
plans that take M (max_rows), the dequantize-once kind only from 17 rows
(its min_rows), and no decode kind (the CPU has none)."""
import json
import os
import re
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TOOL = os.environ.get("VG_TOOL") or os.path.join(ROOT, "build", "bin", "voltgate")
CROSSOVER_CPU = [1, 16, 32, 64, 128, 256]
DQ_MIN_ROWS = 17      # kernels/cpu/plans.c DQPLAN: GROUPED_DECODE_MAX_TOKENS + 1


def run(*args):
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=300, cwd=ROOT)


def cpu_dense_plans():
    """{plan id: (kind name, max_rows)} of the CPU dense plans."""
    proc = run("plans", "--backend", "cpu")
    assert proc.returncode == 0, proc.stderr
    out = {}
    for line in proc.stdout.splitlines():
        f = line.split()
        if len(f) > 2 and f[0] == "cpu" and f[2] == "dense":
            rows = int(re.search(r"max_rows=(\d+)", line).group(1))
            out[f[1]] = ("dequant+cublas" if ".dq." in f[1] else "tiled", rows)
    return out


class CrossoverKindRows(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plans = cpu_dense_plans()
        cls.out, cls.rows = cls.bench("--shape", "dense,crossover", "--tokens", "1,2", "--tune", "on")

    @staticmethod
    def bench(*args):
        with tempfile.TemporaryDirectory(prefix="vg-bench-kinds-") as tmp:
            path = os.path.join(tmp, "bench.json")
            proc = run("bench", "--backend", "cpu", "--quick", "--samples", "3", "--json", path, *args)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            with open(path) as f:
                return proc.stdout, [r for r in json.load(f)["rows"] if r["kind"] == "kernel"]

    def kind_rows(self, rows=None):
        return {r["name"]: r for r in (rows if rows is not None else self.rows) if "/kind=" in r["name"]}

    def test_one_row_per_offered_kind_at_each_crossover_m(self):
        want = set()
        for m in CROSSOVER_CPU:
            for kind in sorted({k for k, rows in self.plans.values()}):
                if any(k == kind and (rows == 0 or rows >= m) and (kind != "dequant+cublas" or m >= DQ_MIN_ROWS)
                       for k, rows in self.plans.values()):
                    want.add(f"n512k512/dense/fp8/m{m}/kind={kind}")
        self.assertEqual(set(self.kind_rows()), want)
        # M=2 is dense's, not the crossover's: tune rows only.
        self.assertIn("n512k512/dense/fp8/m2/tune=on", {r["name"] for r in self.rows})
        self.assertFalse([n for n in self.kind_rows() if "/m2/" in n])

    def test_each_kind_row_is_the_fastest_of_every_plan_of_its_kind_offered_there(self):
        self.assertTrue(self.kind_rows())
        for name, r in self.kind_rows().items():
            with self.subTest(row=name):
                m = int(re.search(r"/m(\d+)/", name).group(1))
                kind = name.rsplit("/kind=", 1)[1]
                offered = {p for p, (k, rows) in self.plans.items()
                           if k == kind and (rows == 0 or rows >= m)}
                cand = r["candidates_us"]
                self.assertEqual(set(cand), offered)
                self.assertTrue(all(v is not None and v > 0 for v in cand.values()), cand)
                self.assertEqual(r["plan"], min(cand, key=cand.get))
                self.assertEqual(r["plan_kind"], kind)
                self.assertEqual(r["decision"], "forced")
                self.assertEqual((r["m"], r["n"], r["k"], r["tokens"], r["path"]), (m, 512, 512, m, "dense"))
                self.assertEqual(len(r["samples_us"]), 3)
                self.assertTrue(r["output_ok"])
                self.assertIsInstance(r["workspace_bytes"], (int, float))
                # the dequantize-once kind needs its FP16 copy of W: 512 x 512 x 2 bytes
                if kind == "dequant+cublas":
                    self.assertGreaterEqual(r["workspace_bytes"], 512 * 512 * 2)

    def test_the_crossover_table_is_printed(self):
        self.assertIn("\nn512k512 crossover (fp8): us of the fastest plan of each kind", self.out)
        table = self.out.split("\nn512k512 crossover (fp8)", 1)[1]
        printed = [int(line.split()[0]) for line in table.splitlines()[2:] if line.strip()[:1].isdigit()]
        self.assertEqual(printed, CROSSOVER_CPU)

    def test_tuned_over_best_is_one_where_the_tuned_choice_is_the_fastest_plan(self):
        # The same plan timed twice (tune row, kind row) differs by the
        # machine's drift; the column says whether the choice was right.
        table = self.out.split("\nn512k512 crossover (fp8)", 1)[1].split("\n\n", 1)[0]
        by_name = {r["name"]: r for r in self.rows}
        same = 0
        for line in table.splitlines()[2:]:
            f = line.split()
            if not f or not f[0].isdigit():
                continue
            m, ratio, plan = int(f[0]), float(f[-2]), f[-1]
            tuned = by_name[f"n512k512/dense/fp8/m{m}/tune=on"]
            fastest = min((r for n, r in self.kind_rows().items() if f"/m{m}/kind=" in n),
                          key=lambda r: r["median_us"])
            with self.subTest(m=m):
                self.assertEqual(plan, tuned["plan"])
                if plan == fastest["plan"]:
                    same += 1
                    self.assertEqual(f[-2], "1.000")
                else:
                    self.assertAlmostEqual(ratio, tuned["median_us"] / fastest["median_us"], delta=6e-4)
        # Which plan is fastest is the machine's call (3 samples a plan; the
        # CPU plans are close, and a loaded or sanitized run is noisy): where
        # the tuner matched it at no M, the 1.000 case went unchecked, and the
        # run says so rather than fail on the timing.
        if same == 0:
            self.skipTest("the CPU tuner chose the fastest plan at no crossover M this run "
                          "(timing noise); the 1.000 case was not checked")

    def test_shards_split_the_kind_rows_and_lose_none(self):
        names = set()
        for i in range(2):
            _, rows = self.bench("--shape", "crossover", "--tune", "on", "--shard", f"{i}/2")
            part = set(self.kind_rows(rows))
            self.assertFalse(names & part)
            names |= part
        self.assertTrue(names)
        self.assertEqual(names, set(self.kind_rows()))

    def test_forced_plans_give_no_kind_rows(self):
        _, rows = self.bench("--shape", "crossover", "--plan", "cpu.dense.m64n64k64.sk1")
        self.assertTrue(rows)
        self.assertFalse(self.kind_rows(rows))


if __name__ == "__main__":
    unittest.main()
