"""The Mann-Whitney U implementation against values computed by hand and
published ones (scipy.stats.mannwhitneyu's documented example)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import stats  # noqa: E402


class MannWhitney(unittest.TestCase):
    def test_scipy_doc_example_exact(self):
        # scipy docs: males vs females, U1 = 17, exact two-sided p = 0.1111.
        u, p, method = stats.mann_whitney_u([19, 22, 16, 29, 24], [20, 11, 17, 12])
        self.assertEqual(method, "exact")
        self.assertEqual(u, 17.0)
        self.assertAlmostEqual(p, 0.1111111111, places=8)   # 14 of 126 arrangements

    def test_scipy_doc_example_normal(self):
        # scipy docs, method="asymptotic": p = 0.11134688653314041.
        u, p, method = stats.mann_whitney_u([19, 22, 16, 29, 24], [20, 11, 17, 12], method="normal")
        self.assertEqual(method, "normal")
        self.assertAlmostEqual(p, 0.11134688653314041, places=10)

    def test_complete_separation_exact(self):
        # Every x below every y: U_x = 0, P = 2 / C(6,3) = 0.1 and 2 / C(8,4) = 2/70.
        self.assertEqual(stats.mann_whitney_u([1, 2, 3], [4, 5, 6]), (0.0, 0.1, "exact"))
        u, p, _ = stats.mann_whitney_u([1, 2, 3, 4], [5, 6, 7, 8])
        self.assertEqual(u, 0.0)
        self.assertAlmostEqual(p, 2.0 / 70.0, places=12)

    def test_u_is_symmetric(self):
        x, y = [3.1, 4.5, 2.2, 8.0, 5.5], [1.0, 9.5, 6.1, 7.7]
        ux, px, _ = stats.mann_whitney_u(x, y)
        uy, py, _ = stats.mann_whitney_u(y, x)
        self.assertEqual(ux + uy, len(x) * len(y))
        self.assertAlmostEqual(px, py, places=12)

    def test_ties_use_normal_with_tie_correction(self):
        # By hand: pooled 1,2,2,2,3,3,4,4 -> mid-ranks; R_x = 1+3+3+5.5 = 12.5,
        # U_x = 12.5 - 10 = 2.5; ties (3,2,2) give sum(t^3-t) = 36;
        # var = 16/12 * (9 - 36/56) = 11.142857; z = (13.5 - 8 - 0.5)/sqrt(var)
        # = 1.497862; p = 2 * (1 - Phi(z)) = 0.134169.
        u, p, method = stats.mann_whitney_u([1, 2, 2, 3], [2, 3, 4, 4])
        self.assertEqual(method, "normal")
        self.assertEqual(u, 2.5)
        self.assertAlmostEqual(p, 0.134169, places=5)
        with self.assertRaises(ValueError):
            stats.mann_whitney_u([1, 2, 2, 3], [2, 3, 4, 4], method="exact")

    def test_all_equal_is_no_evidence(self):
        u, p, _ = stats.mann_whitney_u([5.0] * 10, [5.0] * 10)
        self.assertEqual(u, 50.0)
        self.assertEqual(p, 1.0)

    def test_large_samples_use_normal(self):
        x = [float(i) for i in range(30)]
        y = [i + 0.5 for i in range(30)]
        u, p, method = stats.mann_whitney_u(x, y)
        self.assertEqual(method, "normal")
        # U_x = sum over x_i of #y below it = 0+1+...+29 = 435 (untied).
        self.assertEqual(u, 435.0)
        self.assertGreater(p, 0.5)

    def test_exact_matches_normal_roughly_at_moderate_size(self):
        x = [0.3, 1.2, 2.5, 3.1, 4.4, 5.0, 6.6, 7.2, 8.9, 9.4, 10.1, 11.7]
        y = [2.0, 3.8, 5.9, 7.5, 9.1, 10.6, 12.2, 13.3, 14.8, 15.5, 16.4, 17.9]
        _, pe, me = stats.mann_whitney_u(x, y)
        _, pn, mn = stats.mann_whitney_u(x, y, method="normal")
        self.assertEqual((me, mn), ("exact", "normal"))
        self.assertLess(abs(pe - pn), 0.01)
        self.assertLess(pe, 0.05)

    def test_empty_side_is_an_error(self):
        with self.assertRaises(ValueError):
            stats.mann_whitney_u([], [1.0])

    def test_bisect_step_agrees(self):
        # ci/bisect-step carries its own copy (it must run from outside the
        # tree); it must give the normal approximation's p-value.
        import importlib.machinery
        import importlib.util
        import random
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ci", "bisect-step")
        loader = importlib.machinery.SourceFileLoader("bisect_step", path)
        spec = importlib.util.spec_from_loader("bisect_step", loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        rng = random.Random(2)
        for n1, n2 in ((9, 9), (30, 12), (50, 50)):
            x = [round(rng.gauss(10, 1), 1) for _ in range(n1)]     # rounded: ties happen
            y = [round(rng.gauss(10.5, 1), 1) for _ in range(n2)]
            self.assertAlmostEqual(mod.mann_whitney_p(x, y), stats.mann_whitney_u(x, y, "normal")[1], places=12)
            self.assertEqual(mod.median(x), stats.median(x))

    def test_median(self):
        self.assertEqual(stats.median([3, 1, 2]), 2)
        self.assertEqual(stats.median([4, 1, 3, 2]), 2.5)


if __name__ == "__main__":
    unittest.main()
