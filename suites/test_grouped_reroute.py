"""A grouped call above 16 tokens per group runs as moe, one launch of the
grouped kernels over the call's offsets, not as the per-group loop of dense
plans (issue 31) (with fp8_grouped_bmm_decode off it still runs as loop:
suites/test_decision.c, grouped_switch).  Seen through the tools, on the
CPU backend: voltgate bench on the grouped
shape's three paths (--paths loop,grouped,moe; moe runs the same offsets,
t tokens per group, through the moe path; a row's path says which ran), and
golden verify --plan all, which runs a grouped case above the limit on
both paths the runtime may take."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_bench import ROOT, TOOL, bench  # noqa: E402


class GroupedShapePaths(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, cls.rows = bench("--paths", "loop,grouped,moe", "--tokens", "2,20", "--tune", "off")

    def test_every_path_and_tokens_has_a_row(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        for path in ("loop", "grouped", "moe"):
            for t in (2, 20):
                self.assertIn(f"g4n256k512/{path}/fp8/t{t}/tune=off", self.rows)

    def test_moe_rows_run_grouped_plans(self):
        for t in (2, 20):
            row = self.rows[f"g4n256k512/moe/fp8/t{t}/tune=off"]
            self.assertEqual(row["path"], "moe")
            self.assertEqual(row["m"], 4 * t)
            self.assertTrue(row["plan"].startswith("cpu.grouped."), row["plan"])

    def test_grouped_above_16_tokens_runs_as_moe(self):
        small = self.rows["g4n256k512/grouped/fp8/t2/tune=off"]
        self.assertEqual(small["path"], "grouped")
        big = self.rows["g4n256k512/grouped/fp8/t20/tune=off"]
        self.assertEqual(big["path"], "moe")
        self.assertTrue(big["plan"].startswith("cpu.grouped."), big["plan"])
        # the loop row is still the per-group loop of dense plans
        loop = self.rows["g4n256k512/loop/fp8/t20/tune=off"]
        self.assertEqual(loop["path"], "loop")
        self.assertTrue(loop["plan"].startswith("cpu.dense."), loop["plan"])

    def test_table_has_the_moe_column(self):
        self.assertIn("moe_us", self.proc.stdout)
        self.assertIn("moe: cpu.grouped.", self.proc.stdout)

    def test_unknown_path_is_refused(self):
        proc, rows = bench("--paths", "grouped,zigzag", "--tokens", "2")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("unknown path 'zigzag' (loop, grouped, moe)", proc.stderr)
        self.assertEqual(rows, {})


class GoldenGroupedAboveLimit(unittest.TestCase):
    def test_plan_all_runs_moe_and_loop_plans(self):
        with tempfile.TemporaryDirectory(prefix="vg-golden-reroute-") as tmp:
            path = os.path.join(tmp, "verify.json")
            proc = subprocess.run([TOOL, "golden", "verify", "--backend", "cpu", "--plan", "all",
                                   "--case", "fp8-grouped/t17", "--json", path,
                                   os.path.join(ROOT, "golden", "cases", "fp8-grouped.h5")],
                                  capture_output=True, text=True, timeout=300, cwd=ROOT)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            with open(path) as f:
                rows = json.load(f)["rows"]
        by_note = {}
        for r in rows:
            self.assertEqual(r["verdict"], "PASS", r)
            self.assertEqual(r["path"], "grouped")
            by_note.setdefault(r["note"], []).append(r["plan"])
        self.assertEqual(set(by_note), {"ran as moe", "ran as loop"})
        self.assertTrue(all(p.startswith("cpu.grouped.") for p in by_note["ran as moe"]), by_note)
        self.assertTrue(all(p.startswith("cpu.dense.") for p in by_note["ran as loop"]), by_note)

    def test_heuristic_runs_as_moe(self):
        proc = subprocess.run([TOOL, "golden", "verify", "--backend", "cpu", "--plan", "heuristic",
                               "--case", "fp8-grouped/t17",
                               os.path.join(ROOT, "golden", "cases", "fp8-grouped.h5")],
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("ran as moe", proc.stdout)
        self.assertIn("cpu.grouped.", proc.stdout)


if __name__ == "__main__":
    unittest.main()
