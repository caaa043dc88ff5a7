"""voltgate bench --routing skewed: the moe path's tokens spread unevenly
over the groups, as a router sends them, beside the even rows (t in every
group).  On the CPU backend (4 groups x N=256 x K=512): the skewed rows'
counts per group, their output checked against the FP64 reference like
every kernel row (a wrong one fails the run), the table's column, and the
usage errors."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_bench import TOOL, bench  # noqa: E402


class SkewedRouting(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, cls.rows = bench("--paths", "moe", "--routing", "even,skewed", "--tokens", "2,8,20",
                                   "--tune", "off")

    def test_counts_per_group_fall_off_as_one_over_g_plus_one(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        # 4 x t rows in shares 1, 1/2, 1/3, 1/4 of their sum (25/12), whole rows by
        # largest remainder, worked out by hand: t=8 is 15.36, 7.68, 5.12, 3.84
        # -> 15, 7, 5, 3 and the two rows left to the largest remainders (3, then 1)
        expect = {2: [4, 2, 1, 1], 8: [15, 8, 5, 4], 20: [38, 19, 13, 10]}
        for t, counts in expect.items():
            with self.subTest(tokens=t):
                row = self.rows[f"g4n256k512/moe-skewed/fp8/t{t}/tune=off"]
                self.assertEqual((row["path"], row["routing"]), ("moe", "skewed"))
                self.assertEqual(row["group_rows"], counts)
                self.assertEqual((row["m"], row["tokens"], row["groups"]), (4 * t, t, 4))
                self.assertTrue(row["output_ok"])

    def test_even_rows_stay_beside_them(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        for t in (2, 8, 20):
            row = self.rows[f"g4n256k512/moe/fp8/t{t}/tune=off"]
            self.assertEqual((row["m"], row["path"]), (4 * t, "moe"))
            self.assertNotIn("group_rows", row)
        self.assertEqual(len(self.rows), 6, sorted(self.rows))

    def test_the_table_has_a_column_for_them(self):
        self.assertIn(" skewed_us ", self.proc.stdout)
        self.assertIn("skewed: cpu.", self.proc.stdout)

    def test_skewed_alone_drops_the_even_moe_rows(self):
        proc, rows = bench("--paths", "grouped,moe", "--routing", "skewed", "--tokens", "4", "--tune", "on")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(rows), ["g4n256k512/grouped/fp8/t4/tune=on",
                                        "g4n256k512/moe-skewed/fp8/t4/tune=on"])


class EvenRowsUnchanged(unittest.TestCase):
    def test_the_even_rows_see_the_same_inputs_with_skewed_rows_beside_them(self):
        """The skewed rows' X is a set of its own: asking for them leaves the
        other rows' inputs, hence their outputs' error, as they were."""
        args = ("--tokens", "1,4", "--tune", "off")
        plain, rows = bench(*args)
        both, rows_both = bench(*args, "--paths", "loop,grouped,moe", "--routing", "even,skewed")
        self.assertEqual((plain.returncode, both.returncode), (0, 0), plain.stderr + both.stderr)
        for name, row in rows.items():
            with self.subTest(row=name):
                self.assertEqual(rows_both[name]["max_rel_rms"], row["max_rel_rms"])


def grouped_plans_taking(rows):
    """The CPU grouped plans that take a group of `rows` rows, read from the
    plan table `voltgate plans` prints (max_rows 0 takes any)."""
    proc = subprocess.run([TOOL, "plans", "--backend", "cpu"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    ids = []
    for line in proc.stdout.splitlines()[1:]:
        cols = line.split()
        most = int(next(c for c in cols if c.startswith("max_rows=")).split("=")[1])
        if cols[2] == "grouped" and (most == 0 or most >= rows):
            ids.append(cols[1])
    return ids


class ForcedPlansOnSkewedRouting(unittest.TestCase):
    """--plan with --routing skewed: each plan that takes the largest group's
    rows, timed on the skewed offsets (the way to time a plan the runtime
    would not pick for that routing)."""

    def test_a_row_per_plan_that_takes_the_largest_group(self):
        proc, rows = bench("--paths", "moe", "--routing", "skewed", "--tokens", "8,20",
                           "--plan", "all")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        expect = set()
        for t, most in ((8, 15), (20, 38)):
            plans = grouped_plans_taking(most)
            self.assertGreater(len(plans), 0)
            expect |= {f"g4n256k512/moe-skewed/fp8/t{t}/plan={p}" for p in plans}
        # no even moe row: --routing skewed alone drops them, as for tune rows
        self.assertEqual(set(rows), expect)
        for name, row in rows.items():
            with self.subTest(row=name):
                self.assertEqual((row["path"], row["routing"], row["decision"]),
                                 ("moe", "skewed", "forced"))
                self.assertEqual(row["plan"], name.split("plan=")[1])
                self.assertEqual(sum(row["group_rows"]), row["m"])
                self.assertTrue(row["output_ok"])
        self.assertEqual(rows["g4n256k512/moe-skewed/fp8/t8/plan=cpu.grouped.dq.m64n64k64.sk1"]
                         ["group_rows"], [15, 8, 5, 4])
        self.assertIn("moe-skewed", proc.stdout)

    def test_one_plan_named_beside_the_even_rows(self):
        plan = grouped_plans_taking(38)[0]
        proc, rows = bench("--paths", "moe", "--routing", "even,skewed", "--tokens", "20",
                           "--plan", plan)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(rows), [f"g4n256k512/moe-skewed/fp8/t20/plan={plan}",
                                        f"g4n256k512/moe/fp8/t20/plan={plan}"])


class UsageErrors(unittest.TestCase):
    def test_each_names_the_problem(self):
        for args, message in (
                (("--paths", "grouped", "--routing", "skewed"), "add moe to --paths"),
                (("--paths", "moe", "--routing", "zipf"), "not 'zipf'"),
                (("--paths", "moe", "--routing", ","), "names no routing")):
            with self.subTest(args=args):
                proc, rows = bench(*args)
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                self.assertIn(message, proc.stderr)
                self.assertEqual(rows, {})

    def test_help_says_what_skewed_is(self):
        proc = subprocess.run([TOOL, "bench", "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("--routing LIST", proc.stdout)
        self.assertIn("1/(g+1)", proc.stdout)


if __name__ == "__main__":
    unittest.main()
