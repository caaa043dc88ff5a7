"""The CPU bench names each row after the shape it really runs (issue 30):
its grouped rows are 4 groups x N=256 x K=512, so `g4n256k512/...`, not
`wo_a/...` (the CUDA shape, 8 x 1024 x 4096, whose name those rows carried
into the history until then); its dense rows `n512k512/...`, its prefill rows
`prefill256/...`.  Each name is checked against the shape fields of its own
JSON row, so a row named after another shape fails whatever it is called."""
import json
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TOOL = os.environ.get("VG_TOOL") or os.path.join(ROOT, "build", "bin", "voltgate")


def shape_name(row):
    """The name of the shape a bench row ran, from its JSON fields: the
    grouped and loop paths g<G>n<N>k<K>, dense n<N>k<K>, a square prefill
    prefill<M>."""
    if row["path"] in ("grouped", "loop"):
        return f"g{row['groups']}n{row['n']}k{row['k']}"
    if row["m"] == row["n"] == row["k"] and row["m"] > 16:
        return f"prefill{row['m']}"
    return f"n{row['n']}k{row['k']}"


class CpuBenchNames(unittest.TestCase):
    def bench(self, *args):
        """(stdout, JSON rows) of one CPU bench run with few samples."""
        with tempfile.TemporaryDirectory(prefix="vg-bench-names-") as tmp:
            path = os.path.join(tmp, "bench.json")
            proc = subprocess.run([TOOL, "bench", "--backend", "cpu", "--quick", "--samples", "3",
                                   "--tokens", "1", "--json", path, *args],
                                  capture_output=True, text=True, timeout=300, cwd=ROOT)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            with open(path) as f:
                obj = json.load(f)
        self.assertEqual(obj["backend"], "cpu")
        return proc.stdout, [r for r in obj["rows"] if r["kind"] == "kernel"]

    def check_names(self, rows):
        self.assertTrue(rows, "no kernel row")
        for row in rows:
            with self.subTest(row=row["name"]):
                self.assertEqual(row["name"].split("/", 1)[0], shape_name(row),
                                 f"{row['name']}: {row['groups']} group(s) x N={row['n']} x K={row['k']}, "
                                 f"M={row['m']}")

    def test_every_cpu_row_is_named_after_its_shape(self):
        out, rows = self.bench("--shape", "wo_a,dense,prefill", "--tune", "off")
        self.check_names(rows)
        grouped = [r for r in rows if r["path"] == "grouped"]
        self.assertEqual({r["name"] for r in grouped}, {"g4n256k512/grouped/fp8/t1/tune=off"})
        self.assertFalse([r["name"] for r in rows if r["name"].startswith("wo_a/")])
        # The table's heading names the same shape as its rows.
        self.assertIn("\ng4n256k512: 4 groups x N=256 x K=512, fp8 weights", out)

    def test_forced_plan_rows_too(self):
        out, rows = self.bench("--shape", "wo_a", "--plan", "all")
        self.check_names(rows)
        self.assertTrue(all("/plan=" in r["name"] for r in rows))
        self.assertIn("\ng4n256k512 (fp8), plans forced", out)

    def test_crossover_runs_each_m_once_under_the_dense_name(self):
        """--shape crossover (issue 31) runs the dense shape at M up to 256 on
        the CPU; with dense too, the M both ask for is one row, not two."""
        out, rows = self.bench("--shape", "dense,crossover", "--tune", "off")
        self.check_names(rows)
        names = [r["name"] for r in rows]
        self.assertEqual(len(names), len(set(names)), names)
        # one tune row per M (the kind rows beside them: test_bench_kinds.py)
        self.assertEqual(sorted(r["m"] for r in rows if "/tune=" in r["name"]), [1, 16, 32, 64, 128, 256])
        self.assertIn("n512k512/dense/fp8/m256/tune=off", names)
        self.assertIn("\nn512k512 dense (fp8)", out)

    def test_help_names_the_cpu_rows(self):
        proc = subprocess.run([TOOL, "bench", "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for name in ("g4n256k512", "n512k512", "prefill256"):
            self.assertIn(name, proc.stdout)


if __name__ == "__main__":
    unittest.main()
